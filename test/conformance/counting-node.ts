import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One call the node refused as malformed: what reached it and what it said. */
export interface Refusal {
  method: string;
  params: unknown;
  code: number;
  message: string;
}

/**
 * A node's own "your input is malformed" answers: -32602 invalid params (anvil's answer to anything its
 * deserializer or its argument checks refuse: "missing field `r`", "expected a 1 byte hex string", "Failed to
 * decode transaction") and -32600 invalid request. Answers about state (reverts, unknown blocks, nonces,
 * funds) are not refusals of the input's form: anvil also says -32602 "BlockOutOfRangeError: block height is
 * N but requested was M" for a well-formed block number above its head (geth answers null or "header not
 * found"), which only the chain's state decides; those are kept apart as `stateAnswers`.
 */
export const isRefusal = (code: number) => code === -32602 || code === -32600;
const ABOUT_STATE = /BlockOutOfRangeError|block height is \d+ but requested was/;

/**
 * A counting HTTP proxy in front of a real node (anvil): counts every call it forwards and records every
 * answer in which the node refused the input as malformed, so a test can prove two things from outside the
 * endpoint: a call the spec refuses never reaches the node, and a call the spec accepts is never refused there.
 */
export interface CountingNode {
  url: string;
  /** Calls forwarded (batch members counted one by one). */
  calls(): number;
  refusals: Refusal[];
  /** -32602 answers about the chain's state, not the input's form (a block above the head). */
  stateAnswers: Refusal[];
  close(): Promise<void>;
}

interface Call {
  id?: unknown;
  method?: string;
  params?: unknown;
}
interface Answer {
  id?: unknown;
  error?: { code: number; message: string };
}

export async function countingNode(targetUrl: string): Promise<CountingNode> {
  const target = new URL(targetUrl);
  let forwarded = 0;
  const refusals: Refusal[] = [];
  const stateAnswers: Refusal[] = [];
  const server: Server = createServer((req, res) => {
    // JSON-RPC over HTTP POST only: a WebSocket upgrade (the endpoint's head subscription tries one) or any
    // other request is not a call and never reaches the node.
    if (req.method !== 'POST' || req.headers.upgrade) {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      let sent: Call[] = [];
      try {
        const parsed = JSON.parse(body.toString()) as Call | Call[];
        sent = Array.isArray(parsed) ? parsed : [parsed];
      } catch {
        sent = [];
      }
      forwarded += sent.length;
      const up = request(
        {
          host: target.hostname,
          port: target.port,
          method: 'POST',
          path: target.pathname,
          headers: { 'content-type': 'application/json', 'content-length': body.length },
        },
        (r) => {
          const back: Buffer[] = [];
          r.on('data', (c: Buffer) => back.push(c));
          r.on('end', () => {
            const text = Buffer.concat(back);
            record(sent, text);
            res.writeHead(r.statusCode ?? 200, { 'content-type': 'application/json' });
            res.end(text);
          });
        },
      );
      up.on('error', () => res.destroy());
      up.end(body);
    });
  });

  function record(sent: Call[], text: Buffer) {
    let answers: Answer[];
    try {
      const parsed = JSON.parse(text.toString()) as Answer | Answer[];
      answers = Array.isArray(parsed) ? parsed : [parsed];
    } catch {
      return;
    }
    for (const a of answers) {
      if (!a.error || !isRefusal(a.error.code)) continue;
      const call = sent.find((c) => c.id === a.id) ?? (sent.length === 1 ? sent[0] : undefined);
      const entry = { method: call?.method ?? '?', params: call?.params, code: a.error.code, message: a.error.message };
      (ABOUT_STATE.test(a.error.message) ? stateAnswers : refusals).push(entry);
    }
  }

  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls: () => forwarded,
    refusals,
    stateAnswers,
    close: () =>
      new Promise((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
