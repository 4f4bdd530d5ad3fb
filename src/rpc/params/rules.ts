import { RpcError } from '../../common/errors.js';
import { RpcCodes } from '../errors.js';
import { rawTransactionProblem } from './raw-transaction.js';
import { userOperationProblem, userOperationStateOverrideProblem } from './user-operation.js';

/**
 * Param rules that JSON Schema cannot state (a relation between members, or a decoding), checked after the
 * Router's schema validation and before the handler, so that no input a node would refuse reaches one.
 * Each rule is documented where its schema is described in specs/rpc.openrpc.json.
 */

/** A rule finds the first problem of one param: where it is (a path under the param) and why. */
type Rule = (value: unknown) => { at?: string; reason: string } | undefined;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
const count = (v: unknown) => (Array.isArray(v) ? v.length : undefined);
const absent = (v: unknown) => v === undefined || v === null;

/**
 * CallObject: data and input are synonyms; legacy price or EIP-1559 fees, consistent; with blobs, one commitment and
 * proof per blob.
 */
const callObject: Rule = (tx) => {
  if (!isObject(tx)) return undefined;
  if (typeof tx.data === 'string' && typeof tx.input === 'string' && tx.data.toLowerCase() !== tx.input.toLowerCase()) {
    return {
      at: 'input',
      reason: 'data and input are both set and differ (they are synonyms: give one, or the same bytes in both)',
    };
  }
  if (tx.gasPrice !== undefined && (tx.maxFeePerGas !== undefined || tx.maxPriorityFeePerGas !== undefined)) {
    return {
      at: 'gasPrice',
      reason:
        'gasPrice is set together with maxFeePerGas or maxPriorityFeePerGas (a legacy price or EIP-1559 fees, not both)',
    };
  }
  // anvil reads a missing maxFeePerGas as 0 and refuses any priority fee above it.
  if (
    tx.maxFeePerGas === undefined &&
    typeof tx.maxPriorityFeePerGas === 'string' &&
    BigInt(tx.maxPriorityFeePerGas) > 0n
  ) {
    return {
      at: 'maxPriorityFeePerGas',
      reason: 'a priority fee needs maxFeePerGas (give both: the priority fee is part of the maximum fee)',
    };
  }
  if (
    typeof tx.maxFeePerGas === 'string' &&
    typeof tx.maxPriorityFeePerGas === 'string' &&
    BigInt(tx.maxPriorityFeePerGas) > BigInt(tx.maxFeePerGas)
  ) {
    return {
      at: 'maxPriorityFeePerGas',
      reason: `${tx.maxPriorityFeePerGas} is above maxFeePerGas ${tx.maxFeePerGas} (the priority fee is part of the maximum fee)`,
    };
  }
  const blobs = count(tx.blobs);
  for (const member of ['commitments', 'proofs'] as const) {
    const n = count(tx[member]);
    // Without blobs, commitments and proofs are ignored by the node (anvil, and geth: "no blobs, we're done").
    if (n === undefined || blobs === undefined) continue;
    if (n !== blobs) return { at: member, reason: `${n} ${member} for ${blobs} blobs (one per blob)` };
  }
  const hashes = count(tx.blobVersionedHashes);
  if (blobs !== undefined && hashes !== undefined && hashes !== blobs) {
    return { at: 'blobVersionedHashes', reason: `${hashes} blobVersionedHashes for ${blobs} blobs (one per blob)` };
  }
  return undefined;
};

/** StateOverride: state replaces the whole storage and stateDiff patches it; both at once is refused by nodes. */
const stateOverride: Rule = (overrides) => {
  if (!isObject(overrides)) return undefined;
  for (const [address, account] of Object.entries(overrides)) {
    if (isObject(account) && account.state !== undefined && account.stateDiff !== undefined) {
      return {
        at: address,
        reason:
          'state and stateDiff are both set (state replaces the whole storage, stateDiff changes single slots: give one)',
      };
    }
  }
  return undefined;
};

/**
 * A simulated call without a to: anvil 1.7.1 builds each as a transaction that needs one (-32602 "missing keys: to").
 */
const creation: Rule = (call) =>
  isObject(call) && absent(call.to)
    ? {
        at: 'to',
        reason: "a simulated call needs a to address: this endpoint's node cannot simulate a contract creation",
      }
    : undefined;

/**
 * eth_simulateV1's payload: every call a CallObject and every block's overrides a StateOverride, by the rules above.
 */
const simulatePayload: Rule = (payload) => {
  const blocks =
    isObject(payload) && Array.isArray(payload.blockStateCalls) ? (payload.blockStateCalls as unknown[]) : [];
  for (const [i, block] of blocks.entries()) {
    if (!isObject(block)) continue;
    const overrides = stateOverride(block.stateOverrides);
    if (overrides) return { ...overrides, at: `blockStateCalls.${i}.stateOverrides.${overrides.at}` };
    for (const [j, call] of (Array.isArray(block.calls) ? block.calls : []).entries()) {
      const problem = callObject(call) ?? creation(call);
      if (problem)
        return { ...problem, at: `blockStateCalls.${i}.calls.${j}${problem.at === undefined ? '' : `.${problem.at}`}` };
    }
  }
  return undefined;
};

/**
 * eth_fillTransaction: what anvil 1.7.1 cannot fill. maxFeePerBlobGas without blobVersionedHashes makes it
 * panic and exit (a rule that protects the node); with them it answers -32602 "Failed to decode
 * transaction", so blob fees and hashes are refused (blobs alone it fills). An authorization list needs a
 * `to` (EIP-7702 cannot create; anvil: -32602 "missing keys"), and type 0x7e is an OP deposit it cannot build.
 */
const fillableTransaction: Rule = (tx) => {
  if (!isObject(tx)) return undefined;
  // anvil estimates an omitted gas by running the call (not a plain transfer to an address without code, which only
  // the node can tell), reading a missing maxFeePerGas as 0: a priority fee above it is refused (-32602
  // "max_priority_fee_per_gas greater than max_fee_per_gas"). A given gas or a plain transfer keeps the fees as sent.
  const input = absent(tx.input) ? tx.data : tx.input;
  const plainTransfer =
    !absent(tx.to) && absent(tx.accessList) && absent(tx.authorizationList) && (absent(input) || input === '0x');
  const cap = typeof tx.maxFeePerGas === 'string' ? tx.maxFeePerGas : '0x0';
  if (
    absent(tx.gas) &&
    !plainTransfer &&
    typeof tx.maxPriorityFeePerGas === 'string' &&
    BigInt(tx.maxPriorityFeePerGas) > BigInt(cap)
  )
    return {
      at: 'maxPriorityFeePerGas',
      reason: `${tx.maxPriorityFeePerGas} is above maxFeePerGas ${cap}, which the gas estimate runs the call with (none given: 0; send a gas to have the fees filled as sent)`,
    };
  for (const member of ['maxFeePerBlobGas', 'blobVersionedHashes'] as const) {
    if (tx[member] !== undefined)
      return {
        at: member,
        reason: `${member} is not filled by this endpoint's node (anvil 1.7.1 exits or refuses it); send blobs, or sign the blob transaction yourself`,
      };
  }
  // An authorization list makes anvil build an EIP-7702 transaction, which needs a to. An empty one without a
  // gas is first estimated, and anvil answers that itself (-32003 "empty authorization list"); with a gas it is
  // built, and refused as malformed like a non-empty one.
  const listed = count(tx.authorizationList);
  if (listed !== undefined && (listed > 0 || tx.gas !== undefined) && absent(tx.to)) {
    return {
      at: 'to',
      reason: 'an authorization list needs a to address (an EIP-7702 transaction cannot create a contract)',
    };
  }
  if (typeof tx.type === 'string' && BigInt(tx.type) === 0x7en)
    return { at: 'type', reason: 'type 0x7e is a deposit transaction, which a user cannot send' };
  return undefined;
};

/** eth_feeHistory: percentiles in ascending order (geth refuses them otherwise). */
const ascendingPercentiles: Rule = (list) => {
  if (!Array.isArray(list)) return undefined;
  for (let i = 1; i < list.length; i++) {
    if ((list[i] as number) < (list[i - 1] as number))
      return {
        at: String(i),
        reason: `${String(list[i])} is below ${String(list[i - 1])}: percentiles must be in ascending order`,
      };
  }
  return undefined;
};

const rawTransaction: Rule = (raw) => {
  const reason = typeof raw === 'string' ? rawTransactionProblem(raw) : undefined;
  return reason === undefined ? undefined : { reason };
};

/** Rules by method, each on the param at its position (with the param's name from the spec). */
const RULES = new Map<string, readonly [index: number, rule: Rule][]>(
  Object.entries({
    eth_call: [
      [0, callObject],
      [2, stateOverride],
    ],
    eth_estimateGas: [
      [0, callObject],
      [2, stateOverride],
    ],
    eth_createAccessList: [[0, callObject]],
    eth_fillTransaction: [[0, fillableTransaction]],
    eth_simulateV1: [[0, simulatePayload]],
    debug_traceCall: [[0, callObject]],
    svc_estimateGas: [[0, callObject]],
    vendor_simulateAssetChanges: [[0, callObject]],
    eth_sendUserOperation: [[0, userOperationProblem]],
    eth_estimateUserOperationGas: [[2, userOperationStateOverrideProblem]],
    eth_feeHistory: [[2, ascendingPercentiles]],
    eth_sendRawTransaction: [[0, rawTransaction]],
  } satisfies Record<string, readonly [index: number, rule: Rule][]>),
);

/** Throws -32602 naming the param (and the member inside it) when a rule refuses the call's params. */
export function checkParamRules(method: string, paramNames: readonly string[], params: readonly unknown[]): void {
  // Most methods have no rule: one map lookup, nothing allocated (this runs for every call).
  const rules = RULES.get(method);
  if (rules === undefined) return;
  for (const [index, rule] of rules) {
    if (params[index] === undefined) continue;
    const problem = rule(params[index]);
    if (!problem) continue;
    const name = paramNames[index] ?? `#${index}`;
    const path = problem.at === undefined ? name : `${name}.${problem.at}`;
    throw new RpcError(
      RpcCodes.InvalidParams,
      `invalid params: param ${index} (${name})${problem.at === undefined ? '' : ` at ${path}`}: ${problem.reason}`,
      { param: name, index, path },
    );
  }
}
