import { verifyAuthorization } from 'ethers';

/**
 * v0.7 members that belong to an address (factoryData, the paymaster's) come with it. And a user operation's eip7702Auth must carry a signature that recovers to some address: Alto recovers it
 * before anything else and answers an unrecoverable one (r or s out of range, r not on the curve) with an
 * exception of its own (-32603), not a validation error. Whose address it is stays the bundler's to judge.
 */
export function userOperationProblem(op: unknown): { at: string; reason: string } | undefined {
  if (op === null || typeof op !== 'object') return undefined;
  const set = (k: string) => (op as Record<string, unknown>)[k] !== undefined && (op as Record<string, unknown>)[k] !== null;
  // EntryPoint v0.7 packs initCode = factory ‖ factoryData and paymasterAndData = paymaster ‖ its gas limits ‖
  // paymasterData: without the address the rest has nowhere to go (Alto fails in simulation on it).
  if (set('factoryData') && !set('factory')) return { at: 'factoryData', reason: 'factoryData is set without a factory (it is the factory\'s calldata)' };
  for (const k of ['paymasterVerificationGasLimit', 'paymasterPostOpGasLimit', 'paymasterData']) {
    if (set(k) && !set('paymaster')) return { at: k, reason: `${k} is set without a paymaster` };
  }
  if (!('eip7702Auth' in op)) return undefined;
  const auth = op.eip7702Auth as { chainId: string; address: string; nonce: string; yParity: string; r: string; s: string } | null;
  if (auth === null) return undefined;
  const word = (q: string) => `0x${BigInt(q).toString(16).padStart(64, '0')}`;
  try {
    verifyAuthorization({ address: auth.address, chainId: BigInt(auth.chainId), nonce: BigInt(auth.nonce) }, { r: word(auth.r), s: word(auth.s), yParity: Number(auth.yParity) as 0 | 1 });
    return undefined;
  } catch {
    return { at: 'eip7702Auth', reason: 'its signature (r, s, yParity) recovers to no address: r and s must be valid secp256k1 signature values' };
  }
}
