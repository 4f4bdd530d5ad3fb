/**
 * A peer's binary address (4 bytes IPv4, 16 bytes IPv6, as uWebSockets.js hands it) written the way Node's
 * `socket.remoteAddress` writes it: dotted IPv4, IPv4-mapped IPv6 as `::ffff:a.b.c.d`, other IPv6 in the
 * RFC 5952 short form (lower case, the longest run of two or more zero groups as `::`). Rate-limit buckets and
 * per-client caps are keyed by this text, so both of the endpoint's transports must name a client alike.
 */
export function formatPeerAddress(bytes: Uint8Array): string {
  if (bytes.length === 4) return v4Name(bytes, 0, '');
  if (bytes.length !== 16) return 'unknown';
  if (isV4Mapped(bytes)) return v4Name(bytes, 12, '::ffff:');
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((bytes[i]! << 8) | bytes[i + 1]!);
  // The longest run of zero groups (the first of equal ones), if it is at least two long.
  let best = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) [best, bestLength] = [i, j - i];
    i = j;
  }
  const hex = (from: number, to: number) =>
    groups
      .slice(from, to)
      .map((g) => g.toString(16))
      .join(':');
  return best < 0 ? hex(0, 8) : `${hex(0, best)}::${hex(best + bestLength, 8)}`;
}

/**
 * IPv4 names made once and kept (at most V4_NAMES of each form, then forgotten at once): uWS hands over the
 * address with every request, and a kept string is neither built again nor hashed again by the per-client maps.
 */
const V4_NAMES = 4_096;
const v4Names = { '': new Map<number, string>(), '::ffff:': new Map<number, string>() };

function v4Name(bytes: Uint8Array, at: number, prefix: '' | '::ffff:'): string {
  const key = ((bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) >>> 0;
  const names = v4Names[prefix];
  let name = names.get(key);
  if (name !== undefined) return name;
  if (names.size >= V4_NAMES) names.clear();
  name = `${prefix}${bytes[at]}.${bytes[at + 1]}.${bytes[at + 2]}.${bytes[at + 3]}`;
  names.set(key, name);
  return name;
}

/** ::ffff:a.b.c.d (ten zero bytes, then two 0xff): a loop, as this runs for every request on uWS. */
function isV4Mapped(bytes: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return false;
  return bytes[10] === 0xff && bytes[11] === 0xff;
}
