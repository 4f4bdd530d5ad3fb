import { describe, expect, it } from 'vitest';
import {
  claimGasLimit,
  fitRateLimit,
  planClaim,
  type ClaimFacts,
  type ClaimRules,
} from '../../src/relayer/claim/plan.js';

/**
 * The claiming loop's decisions alone (src/relayer/claim/plan.ts): no chain, no database. The loop
 * that gathers these facts and writes these decisions is covered on anvil (economics, rate-limit, funds tests).
 */
const gwei = (n: number) => BigInt(Math.round(n * 1e9));
const rules: ClaimRules = {
  claiming: {
    maxNumberOfRetries: 3,
    maxClaimGasLimit: 500_000n,
    maxFeePerGasCap: gwei(100),
    maxRelayerSponsorGasLimit: 250_000n,
    profitMargin: '1.5',
    retryDelaySeconds: 30,
  },
  maxGasFeeEnforced: false,
  sponsoringEnabled: false,
  destination: 'L2',
  prefix: 'L1_L2',
  resimulate: { enabled: true, delaySeconds: 60 },
};
const NOW = Date.UTC(2026, 10, 26, 7, 0, 0);
const fees = { maxFeePerGas: gwei(2), maxPriorityFeePerGas: gwei(1), uncappedMaxFeePerGas: gwei(2) };
const facts = (more: Partial<ClaimFacts> = {}): ClaimFacts => ({ now: NOW, fees, ...more });
/** A message whose fee pays `gas` at 2 gwei × `times`. */
const message = (over: { retries?: number; fee?: bigint } = {}) => ({
  retries: over.retries ?? 0,
  fee: String(over.fee ?? 100_000n * gwei(2) * 2n),
});
const at = (seconds: number) => new Date(NOW + seconds * 1_000);

describe('planClaim', () => {
  it('behavior: asks for the gas estimate first, and whether the message is claimed only once the estimate reverted', () => {
    expect(planClaim(message(), facts(), rules)).toEqual({ kind: 'need', fact: 'estimate' });
    expect(planClaim(message(), facts({ estimate: { revert: 'Paused()' } }), rules)).toEqual({
      kind: 'need',
      fact: 'claimedOnChain',
    });
  });

  it('behavior: a fee covering gas × max fee × PROFIT_MARGIN is sent unsponsored, with the fees of a svc_estimateGas answer when it brought some', () => {
    expect(planClaim(message(), facts({ estimate: { gas: 100_000n } }), rules)).toEqual({
      kind: 'send',
      gas: 100_000n,
      fees,
      sponsored: false,
    });
    const own = { maxFeePerGas: gwei(1), maxPriorityFeePerGas: gwei(1), uncappedMaxFeePerGas: gwei(1) };
    expect(planClaim(message(), facts({ estimate: { gas: 100_000n, fees: own } }), rules)).toEqual({
      kind: 'send',
      gas: 100_000n,
      fees: own,
      sponsored: false,
    });
  });

  it('behavior: MAX_NUMBER_OF_RETRIES submissions need an operator, before anything is asked of the chain', () => {
    expect(planClaim(message({ retries: 3 }), facts(), rules)).toEqual({
      kind: 'move',
      to: 'NEEDS_MANUAL_INTERVENTION',
      patch: {},
      reason: '3 claim submissions without success: MAX_NUMBER_OF_RETRIES (3) reached',
    });
  });

  it('behavior: a reverting estimate: claimed already, the L1 rate limit (a wait), or NON_EXECUTABLE with its first re-simulation time', () => {
    const reverted = (revert: string, claimedOnChain: boolean) =>
      planClaim(message(), facts({ estimate: { revert }, claimedOnChain }), rules);
    expect(reverted('MessageAlreadyClaimed()', true)).toEqual({
      kind: 'move',
      to: 'CLAIMED_SUCCESS',
      patch: { claimed_at: new Date(NOW) },
      reason: 'already claimed on L2; no transaction sent',
    });
    expect(reverted('RateLimitExceeded()', false)).toEqual({
      kind: 'wait',
      patch: { failure_reason: 'L1 rate limit reached; retried later', retry_after: at(30) },
    });
    expect(reverted('Paused()', false)).toEqual({
      kind: 'move',
      to: 'NON_EXECUTABLE',
      patch: { retry_after: at(60), resimulations: 0 },
      reason: 'claim reverts in gas estimation: Paused()',
    });
    expect(
      planClaim(message(), facts({ estimate: { revert: 'Paused()' }, claimedOnChain: false }), {
        ...rules,
        resimulate: { enabled: false, delaySeconds: 60 },
      }),
    ).toMatchObject({ to: 'NON_EXECUTABLE', patch: {} });
  });

  it('behavior: above MAX_CLAIM_GAS_LIMIT is NON_EXECUTABLE; above an enforced MAX_FEE_PER_GAS_CAP is FEE_UNDERPRICED until the retry delay', () => {
    expect(planClaim(message(), facts({ estimate: { gas: 500_001n } }), rules)).toMatchObject({
      kind: 'move',
      to: 'NON_EXECUTABLE',
      reason: 'claim needs 500001 gas, above MAX_CLAIM_GAS_LIMIT 500000',
    });
    const dear = { ...fees, uncappedMaxFeePerGas: gwei(101) };
    expect(planClaim(message(), facts({ fees: dear, estimate: { gas: 100_000n } }), rules)).toMatchObject({
      kind: 'send',
    });
    expect(
      planClaim(message(), facts({ fees: dear, estimate: { gas: 100_000n } }), { ...rules, maxGasFeeEnforced: true }),
    ).toEqual({
      kind: 'move',
      to: 'FEE_UNDERPRICED',
      patch: { retry_after: at(30) },
      reason:
        'estimated max fee per gas 101000000000 wei above MAX_FEE_PER_GAS_CAP 100000000000 (L2_MAX_GAS_FEE_ENFORCED)',
    });
  });

  it('behavior: PROFIT_MARGIN is exact: a fee one wei short of cost × margin is FEE_UNDERPRICED, unless the relayer sponsors it', () => {
    const cost = 100_000n * gwei(2);
    const exact = (cost * 3n) / 2n;
    expect(planClaim(message({ fee: exact }), facts({ estimate: { gas: 100_000n } }), rules)).toMatchObject({
      kind: 'send',
      sponsored: false,
    });
    expect(planClaim(message({ fee: exact - 1n }), facts({ estimate: { gas: 100_000n } }), rules)).toEqual({
      kind: 'move',
      to: 'FEE_UNDERPRICED',
      patch: { retry_after: at(30) },
      reason: `fee ${exact - 1n} wei below estimated cost ${cost} wei x PROFIT_MARGIN 1.5`,
    });
    expect(
      planClaim(message({ fee: exact - 1n }), facts({ estimate: { gas: 100_000n } }), {
        ...rules,
        sponsoringEnabled: true,
      }),
    ).toMatchObject({ kind: 'send', sponsored: true });
  });

  it('behavior: a zero fee is ZERO_FEE without sponsoring or above MAX_RELAYER_SPONSOR_GAS_LIMIT, and sponsored within it', () => {
    const zero = (gas: bigint, sponsoringEnabled: boolean) =>
      planClaim(message({ fee: 0n }), facts({ estimate: { gas } }), { ...rules, sponsoringEnabled });
    expect(zero(100_000n, false)).toEqual({
      kind: 'move',
      to: 'ZERO_FEE',
      patch: {},
      reason: 'zero-fee message and L1_L2_ENABLE_RELAYER_SPONSORING is false',
    });
    expect(zero(250_001n, true)).toEqual({
      kind: 'move',
      to: 'ZERO_FEE',
      patch: {},
      reason: 'zero-fee message needs 250001 gas, above MAX_RELAYER_SPONSOR_GAS_LIMIT 250000',
    });
    expect(zero(250_000n, true)).toEqual({ kind: 'send', gas: 250_000n, fees, sponsored: true });
  });
});

describe('fitRateLimit and claimGasLimit', () => {
  it('behavior: a claim takes its fee and value from what is left of the L1 rate limit, or waits; no limit in the direction fits all', () => {
    const m = { fee: '10', value: '90' };
    expect(fitRateLimit(m, undefined, { now: NOW }, rules)).toEqual({ fits: true, left: undefined });
    expect(fitRateLimit(m, 100n, { now: NOW }, rules)).toEqual({ fits: true, left: 0n });
    expect(fitRateLimit(m, 99n, { now: NOW }, rules)).toEqual({
      fits: false,
      wait: {
        failure_reason: 'L1 rate limit: 100 wei does not fit the 99 wei left in the period; retried later',
        retry_after: at(30),
      },
    });
  });

  it('behavior: the gas limit sent is the estimate plus a fifth', () => {
    expect(claimGasLimit(100_000n)).toBe(120_000n);
  });
});
