import { STATUS_CODES } from 'node:http';

const lines = new Map<number, string>();

/** "404 Not Found": a status with Node's own reason phrase (node:http STATUS_CODES), made once per status. */
export function statusLine(status: number): string {
  let line = lines.get(status);
  if (line === undefined) lines.set(status, (line = `${status} ${STATUS_CODES[status] ?? 'Unknown'}`));
  return line;
}
