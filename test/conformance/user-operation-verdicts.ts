import { recoverAuthorizationAddress } from 'viem/utils';
import type { RpcReply } from '../rpc/helpers.js';
import { CANONICAL_ENTRY_POINTS } from '../../src/rpc/bundler.js';

/**
 * The differential of issue 36: the same user operation sent straight to the bundler (Alto) and through our
 * endpoint must get the same verdict. A verdict is a class, not a message: the endpoint words its own
 * refusals, and Alto puts -32601 on some of its schema refusals where we say -32602.
 */

export type Verdict = 'accepted' | 'invalid params' | 'internal error' | `code ${number}`;

/** How Alto words a request its schemas refuse (zod-validation-error), whatever code it puts on it. */
export const isShapeRefusal = (reply: RpcReply) =>
  /Validation error|Required at|Unrecognized key|invalid_union|Expected .*, received/i.test(reply.error?.message ?? '');

export function verdictOf(reply: RpcReply): Verdict {
  if (reply.error === undefined) return 'accepted';
  const { code } = reply.error;
  if (code === -32602 || isShapeRefusal(reply)) return 'invalid params';
  // Alto's own exceptions come without a code; the endpoint passes them on as -32603.
  if (!Number.isInteger(code) || code === -32603) return 'internal error';
  return `code ${code}`;
}

type Op = Record<string, unknown>;
const set = (op: Op, k: string) => op[k] !== undefined && op[k] !== null;
const isV07 = (op: Op) => !('initCode' in op);

/** Whether an eip7702Auth's signature recovers to an address, decided by what Alto itself calls (viem). */
async function recovers(auth: Record<string, string>): Promise<boolean> {
  try {
    await recoverAuthorizationAddress({
      authorization: {
        address: auth.address as `0x${string}`,
        chainId: Number(auth.chainId),
        nonce: Number(auth.nonce),
        r: auth.r as `0x${string}`,
        s: auth.s as `0x${string}`,
        yParity: Number(auth.yParity),
      },
    });
    return true;
  } catch {
    return false;
  }
}

/**
 * Every rule of ours (or of a former version of ours) on the user-operation path, as a predicate on a call:
 * which inputs it concerns. `protects` names the rules kept although Alto's verdict differs, because Alto
 * answers those inputs with an exception of its own (-32603) instead of a validation error.
 */
export const USER_OPERATION_RULES: {
  name: string;
  protects?: true;
  applies(method: string, params: unknown[]): Promise<boolean> | boolean;
}[] = [
  {
    name: 'v0.7 factoryData without factory (dropped)',
    applies: (_m, [op]) => isV07(op as Op) && set(op as Op, 'factoryData') && !set(op as Op, 'factory'),
  },
  {
    name: 'v0.7 paymaster gas limits or data without paymaster (dropped)',
    applies: (_m, [op]) =>
      isV07(op as Op) &&
      !set(op as Op, 'paymaster') &&
      ['paymasterVerificationGasLimit', 'paymasterPostOpGasLimit', 'paymasterData'].some((k) => set(op as Op, k)),
  },
  {
    name: 'eip7702Auth that recovers to no address, on eth_estimateUserOperationGas (dropped)',
    applies: async (m, [op]) =>
      m === 'eth_estimateUserOperationGas' &&
      set(op as Op, 'eip7702Auth') &&
      !(await recovers((op as Op).eip7702Auth as Record<string, string>)),
  },
  {
    name: 'eip7702Auth that recovers to no address, on eth_sendUserOperation',
    protects: true,
    applies: async (m, [op]) =>
      m === 'eth_sendUserOperation' &&
      set(op as Op, 'eip7702Auth') &&
      !(await recovers((op as Op).eip7702Auth as Record<string, string>)),
  },
  {
    name: 'operation of one version to the canonical EntryPoint of the other',
    applies: (_m, [op, entryPoint]) =>
      String(entryPoint).toLowerCase() === CANONICAL_ENTRY_POINTS[isV07(op as Op) ? '0.6' : '0.7'],
  },
  {
    name: 'stateOverride with state and stateDiff for one account (refused where state has slots)',
    protects: true,
    applies: (m, params) =>
      m === 'eth_estimateUserOperationGas' &&
      Object.values((params[2] ?? {}) as Record<string, Op>).some(
        (a) => a !== null && typeof a === 'object' && a.state !== undefined && a.stateDiff !== undefined,
      ),
  },
];

export interface Trial {
  source: string;
  method: string;
  params: unknown[];
  ours: Verdict;
  theirs: Verdict;
  rules: string[];
  oursReply: RpcReply;
  theirsReply: RpcReply;
}

/** Sends a call both ways (the same params, or `theirsParams` where an operation must differ, e.g. its nonce). */
export async function trial(
  source: string,
  method: string,
  ask: {
    ours: (method: string, params: unknown[]) => Promise<RpcReply>;
    theirs: (method: string, params: unknown[]) => Promise<RpcReply>;
  },
  params: unknown[],
  theirsParams: unknown[] = params,
): Promise<Trial> {
  const rules: string[] = [];
  for (const rule of USER_OPERATION_RULES) if (await rule.applies(method, params)) rules.push(rule.name);
  const [oursReply, theirsReply] = [await ask.ours(method, params), await ask.theirs(method, theirsParams)];
  return {
    source,
    method,
    params,
    ours: verdictOf(oursReply),
    theirs: verdictOf(theirsReply),
    rules,
    oursReply,
    theirsReply,
  };
}

/**
 * A trial is as it must be: the same verdict, or a protecting rule refused (-32602) what Alto does not accept
 * either: it fails on it with an exception, or refuses it for another cause it checks first (an AA30 for a
 * paymaster that is not deployed comes before Alto reads the state override).
 */
export function agrees(t: Trial): boolean {
  if (t.ours === t.theirs) return true;
  const protecting = USER_OPERATION_RULES.some((r) => r.protects && t.rules.includes(r.name));
  return protecting && t.ours === 'invalid params' && t.theirs !== 'accepted';
}

/** Per rule: inputs tried, verdicts equal, refusals that protect the bundler; then the trials that disagree. */
export function report(trials: Trial[]): { lines: string[]; disagreeing: string[] } {
  const lines = USER_OPERATION_RULES.map((rule) => {
    const mine = trials.filter((t) => t.rules.includes(rule.name));
    const equal = mine.filter((t) => t.ours === t.theirs).length;
    const guarded = mine.filter((t) => t.ours !== t.theirs && agrees(t));
    const thrown = guarded.filter((t) => t.theirs === 'internal error').length;
    const protects = `, refused by us where Alto fails with an exception: ${thrown}, where Alto refuses for another cause: ${guarded.length - thrown}`;
    return `${rule.name}: ${mine.length} inputs tried, ${equal} verdicts equal${rule.protects ? protects : ''}`;
  });
  const none = trials.filter((t) => t.rules.length === 0);
  lines.push(
    `no rule of ours concerned: ${none.length} inputs tried, ${none.filter((t) => t.ours === t.theirs).length} verdicts equal`,
  );
  const disagreeing = trials
    .filter((t) => !agrees(t))
    .map(
      (t) =>
        `${t.source} ${t.method} ${JSON.stringify(t.params).slice(0, 300)}: ours ${t.ours} (${t.oursReply.error?.message.slice(0, 160) ?? 'result'}), Alto ${t.theirs} (${t.theirsReply.error?.message.slice(0, 160) ?? 'result'})`,
    );
  return { lines, disagreeing };
}
