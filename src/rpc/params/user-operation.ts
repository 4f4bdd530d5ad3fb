import { secp256k1 } from '@noble/curves/secp256k1.js';
import { getBytes, hashAuthorization } from 'ethers';

/**
 * The one rule of ours on a user operation, for eth_sendUserOperation only: its eip7702Auth must carry a signature that
 * recovers to some address. Alto recovers it (viem, @noble/curves) before anything else on a send and answers an
 * unrecoverable one (r or s outside 1..n-1, r not an x on the curve) with an exception of its own (-32603), not a
 * validation error; on an estimate it does not recover it, so neither do we. The recovery is noble's as in Alto: a high
 * s (above n/2) recovers, as there. Whose address it is, and every other member (v0.7 paymaster gas limits or
 * factoryData without their address, which Alto leaves out of the packed operation), stays the bundler's to judge:
 * test/conformance/user-operations.test.ts sends the same operations both ways.
 */
export function userOperationProblem(op: unknown): { at: string; reason: string } | undefined {
  if (op === null || typeof op !== 'object' || !('eip7702Auth' in op)) return undefined;
  const auth = op.eip7702Auth as {
    chainId: string;
    address: string;
    nonce: string;
    yParity: string;
    r: string;
    s: string;
  } | null;
  if (auth === null) return undefined;
  try {
    // Lower case: Alto reads a mixed-case address whatever its EIP-55 checksum, where ethers would throw on a bad one.
    const hash = hashAuthorization({
      address: auth.address.toLowerCase(),
      chainId: BigInt(auth.chainId),
      nonce: BigInt(auth.nonce),
    });
    new secp256k1.Signature(BigInt(auth.r), BigInt(auth.s), Number(auth.yParity)).recoverPublicKey(getBytes(hash));
    return undefined;
  } catch {
    return {
      at: 'eip7702Auth',
      reason:
        'its signature (r, s, yParity) recovers to no address: r and s must be in 1..n-1 of secp256k1 and r the x of a point on the curve',
    };
  }
}

/**
 * eth_estimateUserOperationGas's stateOverride: an account with storage in `state` and a `stateDiff` (even an empty
 * one) makes Alto fail with an exception of its own ("could not parse simulate validation result",
 * -32603); with an empty `state` it estimates. So only the first is refused here, where a node (eth_call's rule)
 * refuses any `state` with `stateDiff`.
 */
export function userOperationStateOverrideProblem(overrides: unknown): { at: string; reason: string } | undefined {
  if (overrides === null || typeof overrides !== 'object') return undefined;
  for (const [address, account] of Object.entries(
    overrides as Record<string, { state?: object; stateDiff?: object } | null>,
  )) {
    if (account?.state !== undefined && Object.keys(account.state).length > 0 && account.stateDiff !== undefined) {
      return {
        at: address,
        reason:
          'state is set with slots and stateDiff is set too (state replaces the whole storage, stateDiff changes single slots: give one)',
      };
    }
  }
  return undefined;
}
