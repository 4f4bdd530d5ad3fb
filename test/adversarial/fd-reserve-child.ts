import { readdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { parseEnv } from '../../src/common/config/env.js';
import { httpEnv, httpLimitsFrom } from '../../src/common/config/http-env.js';
import { descriptors } from '../../src/common/http/descriptors.js';
import { listen } from '../../src/common/http/server.js';

/**
 * The process of fd-reserve.test.ts, started under a low `ulimit -n`: one HTTP server built by listen() with the
 * HTTP_* variables of its environment. Asked over IPC, it reports its descriptors, or opens connections of its
 * own (as its database pool and its nodes' would be) and says how each went.
 */
type Ask = { kind: 'state' } | { kind: 'connect'; port: number; count: number };

const server = await listen((_req, res) => res.end('ok'), '127.0.0.1', 0, 'fd-child', {
  limits: httpLimitsFrom(parseEnv(httpEnv, process.env).values),
});
const own: Socket[] = [];
process.send!({ url: server.url, limit: descriptors.limit, clientCap: descriptors.clientCap });
/** Descriptors open now; the limit itself when even listing them fails for want of one. */
function openDescriptors(): number {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EMFILE') return descriptors.limit ?? Infinity;
    throw err;
  }
}

process.on('message', (ask: Ask) => {
  if (ask.kind === 'state') return void process.send!({ fds: openDescriptors(), clients: descriptors.open });
  void Promise.all(
    Array.from(
      { length: ask.count },
      () =>
        new Promise<string>((resolve) => {
          const s = connect(ask.port, '127.0.0.1');
          own.push(s);
          s.once('connect', () => resolve('ok'));
          s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
        }),
    ),
  ).then((results) => process.send!({ results }));
});
