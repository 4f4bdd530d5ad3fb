import type { HandlerContext } from '../http/context.js';
import { getCirculatingSupply } from './getCirculatingSupply.js';
import { getPrices } from './getPrices.js';
import { getToken } from './getToken.js';
import { getTokenCandles } from './getTokenCandles.js';
import { getTokenPriceSources } from './getTokenPriceSources.js';
import { getTokenPrices } from './getTokenPrices.js';
import { getTotalSupply } from './getTotalSupply.js';
import { listTokens } from './listTokens.js';

/** One handler per operationId of specs/token-api.openapi.yaml. */
export function tokenApiHandlers(ctx: HandlerContext) {
  return {
    listTokens: listTokens(ctx),
    getToken: getToken(ctx),
    getTotalSupply: getTotalSupply(ctx),
    getCirculatingSupply: getCirculatingSupply(ctx),
    getTokenPrices: getTokenPrices(ctx),
    getPrices: getPrices(ctx),
    getTokenPriceSources: getTokenPriceSources(ctx),
    getTokenCandles: getTokenCandles(ctx),
  };
}
