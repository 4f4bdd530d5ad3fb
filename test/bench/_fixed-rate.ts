/**
 * Latency at a fixed rate (open loop), for the rpc bench: requests fall due evenly (`rate` per second), are
 * released each millisecond tick, and each latency is counted from its release, not from when a connection was
 * free to send it, so a server that stalls is charged for the queue it causes (no coordinated omission). The
 * timer's own lateness is not charged; the floor server measured the same way shows what the generator and the
 * kernel add. autocannon's `-R` cannot do this: it sends a second's quota as a burst, then idles, and records
 * whole milliseconds.
 * Requests are static bytes written on raw keep-alive sockets, one in flight per connection; an answer is
 * framed by its Content-Length and must be status 200. Latencies are in microseconds (process.hrtime).
 */
import { connect, type Socket } from 'node:net';

export interface FixedRateResult {
  rate: number;
  /** Requests answered per second over the run (below `rate` when the server or the generator fell behind). */
  achieved: number;
  p50Us: number;
  p99Us: number;
  maxUs: number;
  /** Answers that were not status 200, and requests still unanswered when the run ended. */
  bad: number;
  unanswered: number;
}

const TICK_MS = 1;

interface Conn {
  socket: Socket;
  request: Buffer;
  /** When the request in flight was due (ns), or undefined when the connection is free. */
  due?: bigint;
  buffered: Buffer;
}

function requestBytes(url: URL, body: string): Buffer {
  const payload = Buffer.from(body);
  const head = `POST ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${payload.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head), payload]);
}

/** The length of the first whole response in `buf` and its status, or undefined while it is incomplete. */
function frame(buf: Buffer): { length: number; status: number } | undefined {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const head = buf.subarray(0, end).toString('latin1');
  const status = Number(head.slice(9, 12));
  const m = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (!m)
    throw new Error(
      `fixed-rate load: an answer without Content-Length (chunked answers are not framed here): ${head.split('\r\n')[0]}`,
    );
  const length = end + 4 + Number(m[1]);
  return buf.length >= length ? { length, status } : undefined;
}

const percentile = (sorted: Float64Array, q: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

/**
 * `rate` requests per second for `seconds` over `connections` keep-alive connections; connection i always
 * sends bodies[i % bodies.length] (a filter per connection, as in the saturated runs).
 */
export async function fixedRate(
  target: string,
  bodies: string[],
  rate: number,
  seconds: number,
  connections = 32,
): Promise<FixedRateResult> {
  const url = new URL(target);
  const total = Math.round(rate * seconds);
  const latencies = new Float64Array(total);
  let answered = 0;
  let bad = 0;
  let failure: Error | undefined;
  const free: Conn[] = [];
  // Released requests not sent yet, oldest first: an array read from `next` (shift() would cost O(n) per send once a
  // slow server lets the backlog grow, and the generator's own CPU would then show as the server's latency).
  const backlog: bigint[] = [];
  let next = 0;
  const waiting = () => backlog.length - next;
  const conns = await Promise.all(
    Array.from({ length: connections }, (_, i) => {
      return new Promise<Conn>((resolve, reject) => {
        const socket = connect(Number(url.port), url.hostname, () => resolve(conn));
        const conn: Conn = {
          socket,
          request: requestBytes(url, bodies[i % bodies.length]!),
          buffered: Buffer.alloc(0),
        };
        socket.setNoDelay(true);
        socket.once('error', reject);
        socket.on('data', (chunk: Buffer) => {
          conn.buffered = conn.buffered.length === 0 ? chunk : Buffer.concat([conn.buffered, chunk]);
          try {
            const f = frame(conn.buffered);
            if (!f || conn.due === undefined) return;
            conn.buffered = conn.buffered.subarray(f.length);
            if (f.status !== 200) bad++;
            latencies[answered++] = Number(process.hrtime.bigint() - conn.due) / 1000;
            conn.due = undefined;
            dispatch(conn);
          } catch (err) {
            failure ??= err as Error;
          }
        });
      });
    }),
  );
  // The next due request goes to this connection, or the connection waits for one.
  const dispatch = (conn: Conn) => {
    const due = next < backlog.length ? backlog[next++] : undefined;
    if (due === undefined) {
      free.push(conn);
      return;
    }
    conn.due = due;
    conn.socket.write(conn.request);
  };
  const start = process.hrtime.bigint();
  const intervalNs = BigInt(Math.round(1e9 / rate));
  let issued = 0;
  await new Promise<void>((resolve) => {
    const tick = setInterval(() => {
      const now = process.hrtime.bigint();
      // Every request due by now joins the backlog, timed from this tick: the timer's own lateness (up to a tick)
      // is the generator's, not the server's; a wait for a free connection is the server's and is counted.
      while (issued < total && start + BigInt(issued) * intervalNs <= now) {
        backlog.push(now);
        issued++;
      }
      while (waiting() > 0 && free.length > 0) dispatch(free.pop()!);
      if (issued >= total) {
        clearInterval(tick);
        resolve();
      }
    }, TICK_MS);
    for (const c of conns) free.push(c);
  });
  // The last requests get one second to be answered; what is still open then is counted, not waited for.
  const deadline = Date.now() + 1000;
  while (answered < total - waiting() && Date.now() < deadline && conns.some((c) => c.due !== undefined))
    await new Promise((r) => setTimeout(r, 5));
  const elapsedS = Number(process.hrtime.bigint() - start) / 1e9;
  for (const c of conns) c.socket.destroy();
  if (failure) throw failure;
  const sorted = latencies.subarray(0, answered).sort();
  return {
    rate,
    achieved: answered / elapsedS,
    p50Us: percentile(sorted, 0.5),
    p99Us: percentile(sorted, 0.99),
    maxUs: sorted.length ? sorted[sorted.length - 1]! : NaN,
    bad,
    unanswered: total - answered,
  };
}
