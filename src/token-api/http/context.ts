import type { Request } from 'express';
import { badRequest } from '../../common/errors.js';
import { isHexOfLength } from '../../common/eth/hex.js';
import type { ReadModel } from '../read-model/model.js';
import type { TokenRepository } from '../repository.js';
import type { SupplyCache } from '../supply/job.js';
import { send, type AnyRequest, type AnyResponse, type Representation } from './representation.js';

/** What every handler receives: data access, the supply figures and the settings that shape responses. */
export interface HandlerContext {
  /** The database, for readiness only: every answer comes from `model`. */
  repo: TokenRepository;
  model: ReadModel;
  /** The clock of the price window (epoch ms); tests move it. */
  now(): number;
  supply: SupplyCache;
  nativeToken: string | undefined;
  cacheMaxAgeSeconds: number;
  /** Send through res.json so the validator can check our responses (tests). */
  validateResponses: boolean;
  /** Base URL of generated logos; known only once the server listens. */
  logoBase(): string;
}

export const MAX_ADDRESSES = 100;

/**
 * Splits a comma-separated `addresses` parameter. Every item counts toward the limit (duplicates too), every item must
 * be an address, and the first bad item is named. Returns distinct lower-case addresses in request order.
 */
export function parseAddresses(raw: string): string[] {
  const items = raw.split(',');
  if (items.length > MAX_ADDRESSES) {
    throw badRequest(`addresses: ${items.length} items given, at most ${MAX_ADDRESSES} are allowed`, {
      errors: [{ path: 'query/addresses', message: `must have at most ${MAX_ADDRESSES} items` }],
    });
  }
  const out = new Set<string>();
  items.forEach((item, i) => {
    if (!isHexOfLength(item, 20)) {
      const shown = item.length > 64 ? `${item.slice(0, 61)}...` : item;
      throw badRequest(
        `addresses: item ${i + 1} '${shown}' is not a contract address (0x followed by 40 hexadecimal digits)`,
        { errors: [{ path: 'query/addresses', message: `item ${i + 1} '${shown}' is not a contract address` }] },
      );
    }
    out.add(item.toLowerCase());
  });
  return [...out];
}

/** The validated path address, lower-cased (the validator has checked its pattern). */
export const pathAddress = (req: Request): string => String(req.params.contractAddress).toLowerCase();

/** Sends an answer of the read model (answers.ts); through res.json when our responses are validated (tests). */
export function sendAnswer(ctx: HandlerContext, req: AnyRequest, res: AnyResponse, rep: Representation): void {
  send(req, res, rep, { viaJson: ctx.validateResponses });
}
