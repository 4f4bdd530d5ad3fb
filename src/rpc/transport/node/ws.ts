import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { NodeRequestHead } from '../../../common/http/request-head.js';
import { statusLine } from '../../../common/http/status-line.js';
import { socketSessions, type PeerEvents, type PeerSocket, type Refusal, type WsServerOptions } from '../session.js';

/** An upgrade refused as a plain HTTP answer on the raw socket (the client sees the status and why). */
function refuse(socket: Duplex, { status, message, retryAfterSeconds }: Refusal): void {
  const body = JSON.stringify({ error: message });
  const retry = retryAfterSeconds === undefined ? '' : `retry-after: ${retryAfterSeconds}\r\n`;
  socket.end(
    `HTTP/1.1 ${statusLine(status)}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${retry}connection: close\r\n\r\n${body}`,
  );
}

/** A `ws` socket as a PeerSocket, its events handed to the session. */
function peerOf(ws: WebSocket): PeerSocket {
  const raw = (ws as unknown as { _socket?: { pause(): void; resume(): void } })._socket;
  return {
    get open() {
      return ws.readyState === ws.OPEN;
    },
    get bufferedAmount() {
      return ws.bufferedAmount;
    },
    send: (text) => ws.send(text),
    close: (code, reason) => ws.close(code, reason),
    terminate: () => ws.terminate(),
    ping: () => ws.ping(),
    pauseReading: () => raw?.pause(),
    resumeReading: () => raw?.resume(),
  };
}

function listen(ws: WebSocket, events: PeerEvents, o: WsServerOptions): void {
  ws.on('message', (data: RawData, isBinary: boolean) =>
    events.message(
      isBinary
        ? Buffer.concat(Array.isArray(data) ? data : [Buffer.from(data as ArrayBuffer)]).toString('utf8')
        : data.toString(),
    ),
  );
  ws.on('pong', events.pong);
  ws.on('error', (err) => o.logger.debug({ err }, 'websocket error'));
  ws.on('close', events.closed);
}

/**
 * JSON-RPC over WebSocket on node:http (RPC_TRANSPORT=node) with the `ws` library: admission, session and
 * limits are the sessions' (session.ts). The TCP connection caps were taken when the connection was accepted
 * (common/http/server.ts), so a socket holds no descriptor of its own here.
 */
export function attachWebSocket(server: Server, o: WsServerOptions): { close(): Promise<void> } {
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: o.maxMessageBytes,
    perMessageDeflate: false,
    clientTracking: false,
  });
  const sessions = socketSessions(o);
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => undefined);
    sessions.upgrade(new NodeRequestHead(req), {
      gone: () => socket.destroyed,
      refuse: (r) => refuse(socket, r),
      accept: (access, release) => {
        // The raw socket closes whatever happens (handshake failed, socket served and closed): the slot goes with it.
        socket.once('close', release);
        wss.handleUpgrade(req, socket, head, (ws) => listen(ws, sessions.serve(peerOf(ws), access), o));
      },
    });
  };
  server.on('upgrade', onUpgrade);
  return {
    close: () => {
      server.off('upgrade', onUpgrade);
      return sessions.close();
    },
  };
}
