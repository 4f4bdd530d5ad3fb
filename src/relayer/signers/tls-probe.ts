import { connect } from 'node:tls';

export interface TlsMaterial {
  key?: string;
  cert?: string;
  ca?: string[];
}

/** What a bare TLS connection found out: the server's alert, or that it hung up right after the handshake. */
export type TlsProbeResult = { kind: 'alert'; error: Error } | { kind: 'closed-after-handshake' };

/**
 * Why a connection was reset right after the TLS handshake. Under TLS 1.3 the client finishes its handshake before the
 * server has checked the client certificate. A server that rejects the certificate then sends an alert (Java/Netty
 * servers such as Web3Signer) or just closes the socket (Node's own TLS server); either way our HTTP request is already
 * on the wire, the close becomes a TCP reset, and all the request sees is ECONNRESET.
 *
 * This opens one bare TLS connection with the same material and sends nothing, so nothing turns the close into a reset.
 * A rejecting server's alert then arrives as the socket error, or the server closes a fresh idle connection within
 * milliseconds of the handshake, which no HTTP server does to a client it accepted. Resolves to undefined when the
 * server keeps the connection open for `waitMs` or the probe fails for another reason (then the reset was something
 * else, e.g. the signer restarting).
 */
export function probeTlsRejection(
  url: URL,
  material: TlsMaterial,
  waitMs: number,
): Promise<TlsProbeResult | undefined> {
  return new Promise((resolve) => {
    let handshakeDone = false;
    const socket = connect({ host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 443), ...material });
    const done = (result: TlsProbeResult | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => done(undefined), waitMs);
    socket.on('secureConnect', () => {
      handshakeDone = true;
    });
    socket.on('data', () => done(undefined));
    socket.on('error', (error) => done(/alert/i.test(error.message) ? { kind: 'alert', error } : undefined));
    socket.on('close', () => done(handshakeDone ? { kind: 'closed-after-handshake' } : undefined));
  });
}
