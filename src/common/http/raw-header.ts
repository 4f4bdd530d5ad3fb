import type { IncomingMessage } from 'node:http';

/**
 * One request header read from `rawHeaders` (the first of that name), without building `req.headers`:
 * Node builds that object on first access, one `_addHeaderLine` per header, a measurable share of a small
 * JSON-RPC call. `name` in lower case.
 */
export function rawHeader(req: IncomingMessage, name: string): string | undefined {
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const key = raw[i]!;
    if (key.length === name.length && key.toLowerCase() === name) return raw[i + 1];
  }
  return undefined;
}
