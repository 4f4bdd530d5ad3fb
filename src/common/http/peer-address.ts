/**
 * A peer's binary address (4 bytes IPv4, 16 bytes IPv6, as uWebSockets.js hands it) written the way Node's
 * `socket.remoteAddress` writes it: dotted IPv4, IPv4-mapped IPv6 as `::ffff:a.b.c.d`, other IPv6 in the
 * RFC 5952 short form (lower case, the longest run of two or more zero groups as `::`). Rate-limit buckets and
 * per-client caps are keyed by this text, so both of the endpoint's transports must name a client alike.
 */
export function formatPeerAddress(bytes: Uint8Array): string {
  if (bytes.length === 4) return `${bytes[0]}.${bytes[1]}.${bytes[2]}.${bytes[3]}`;
  if (bytes.length !== 16) return 'unknown';
  const mapped = bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  if (mapped) return `::ffff:${bytes[12]}.${bytes[13]}.${bytes[14]}.${bytes[15]}`;
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((bytes[i]! << 8) | bytes[i + 1]!);
  // The longest run of zero groups (the first of equal ones), if it is at least two long.
  let best = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) [best, bestLength] = [i, j - i];
    i = j;
  }
  const hex = (from: number, to: number) => groups.slice(from, to).map((g) => g.toString(16)).join(':');
  return best < 0 ? hex(0, 8) : `${hex(0, best)}::${hex(best + bestLength, 8)}`;
}
