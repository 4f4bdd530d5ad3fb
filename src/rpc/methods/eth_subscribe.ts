import { RpcError } from '../../common/errors.js';
import { defineMethod } from '../context.js';
import { RpcCodes } from '../errors.js';

/**
 * eth_subscribe: newHeads, logs or newPendingTransactions, on the socket the call came over (src/rpc/ws).
 * Over HTTP there is nothing to push notifications to.
 */
export default defineMethod('eth_subscribe', (_ctx, [kind, filter, options], call) => {
  if (!call.socket)
    throw new RpcError(
      RpcCodes.MethodNotFound,
      'eth_subscribe needs a WebSocket connection: open ws://<this host>/ (same port as HTTP) and subscribe there; over HTTP use eth_newFilter',
    );
  return call.socket.subscribe(kind, filter, options);
});
