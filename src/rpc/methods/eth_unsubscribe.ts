import { RpcError } from '../../common/errors.js';
import { defineMethod } from '../context.js';
import { RpcCodes } from '../errors.js';

/** eth_unsubscribe: true when the subscription was this socket's and is now gone. */
export default defineMethod('eth_unsubscribe', async (_ctx, [subscriptionId], call) => {
  if (!call.socket)
    throw new RpcError(
      RpcCodes.MethodNotFound,
      'eth_unsubscribe needs the WebSocket connection that made the subscription',
    );
  return call.socket.unsubscribe(subscriptionId);
});
