/**
 * The rpc bench's calibrators, each run as its own process: `node _floor-server.mjs node|uws`. A server that
 * reads the body, parses it as JSON and answers a constant result with the request's id: what any Node
 * JSON-RPC endpoint pays at least per call over that transport (the floor), so the endpoint's distance from
 * it is what our own code costs. Prints "listening on http://…" like `l2stack rpc`.
 */
import { createServer } from 'node:http';

const answer = (text) => {
  const id = JSON.parse(text).id;
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id ?? null)},"result":"0x1"}`;
};

if (process.argv[2] === 'uws') {
  // uWebSockets.js (the build Ganache ships): its own event loop integration and HTTP parser in C++.
  const { default: uws } = await import('uwebsockets');
  uws
    .App()
    .post('/*', (res) => {
      const chunks = [];
      let aborted = false;
      res.onAborted(() => (aborted = true));
      res.onData((chunk, last) => {
        // uWS reuses the chunk's memory after the callback: copy it.
        chunks.push(Buffer.from(Buffer.from(chunk)));
        if (!last || aborted) return;
        const body = answer(Buffer.concat(chunks).toString('utf8'));
        res.cork(() => res.writeHeader('content-type', 'application/json').end(body));
      });
    })
    .listen('127.0.0.1', 0, (token) => {
      if (!token) throw new Error('uws: listen failed');
      console.log(`listening on http://127.0.0.1:${uws.us_socket_local_port(token)}`);
    });
} else {
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = answer((chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)).toString('utf8'));
      res.writeHead(200, ['content-type', 'application/json', 'content-length', String(Buffer.byteLength(body))]);
      res.end(body);
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
}
// An orderly exit on SIGTERM, so `--cpu-prof` writes its profile.
process.on('SIGTERM', () => process.exit(0));
