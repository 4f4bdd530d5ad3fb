import type { ParityTrace } from '../../../generated/rpc/methods.js';
import { quantity } from '../types.js';
/**
 * Converts callTracer output into Parity-style traces (trace_transaction), for upstreams that do not
 * serve trace_transaction. The frames are listed depth-first, top-level call first; blockNumber,
 * transactionPosition, subtraces and traceAddress are JSON integers. The top-level frame's gas and
 * gasUsed exclude the intrinsic gas, as the Parity format (and nodes that serve it) do.
 */
export interface CallFrame {
  type: string;
  from: string;
  to?: string;
  value?: string;
  gas: string;
  gasUsed: string;
  input: string;
  output?: string;
  error?: string;
  calls?: CallFrame[];
}

export interface TxInfo {
  hash: string;
  blockHash: string | null;
  blockNumber: string | null;
  transactionIndex: string | null;
  gas: string;
  input: string;
  to: string | null;
  accessList?: { address: string; storageKeys: string[] }[];
  authorizationList?: unknown[];
}

export type { ParityTrace };

/** Intrinsic gas of a transaction (EIP-2028 calldata, EIP-2930 access list, EIP-3860 initcode, EIP-7702). */
function intrinsicGas(tx: TxInfo): bigint {
  const data = Buffer.from(tx.input.slice(2), 'hex');
  let gas = 21_000n;
  for (const b of data) gas += b === 0 ? 4n : 16n;
  if (tx.to === null || tx.to === undefined) gas += 32_000n + 2n * BigInt(Math.ceil(data.length / 32));
  for (const entry of tx.accessList ?? []) gas += 2_400n + 1_900n * BigInt(entry.storageKeys.length);
  gas += 25_000n * BigInt(tx.authorizationList?.length ?? 0);
  return gas;
}

const ERRORS: Record<string, string> = {
  'execution reverted': 'Reverted',
  'out of gas': 'Out of gas',
  'invalid jump destination': 'Bad jump destination',
  'stack underflow': 'Stack underflow',
  'stack limit reached 1024 (1023)': 'Out of stack',
};

function parityError(error: string): string {
  if (ERRORS[error]) return ERRORS[error];
  if (/^invalid opcode/.test(error)) return 'Bad instruction';
  return error;
}

/** The callee of a call or selfdestruct frame: callTracer always writes it (only a failed create has none). */
function callee(f: CallFrame): string {
  if (f.to === undefined) throw new Error(`callTracer frame of type ${f.type} has no "to"`);
  return f.to;
}

export function parityFromCallTrace(top: CallFrame, tx: TxInfo): ParityTrace[] {
  const out: ParityTrace[] = [];
  const intrinsic = intrinsicGas(tx);
  const common = {
    blockHash: tx.blockHash ?? '0x',
    blockNumber: Number(BigInt(tx.blockNumber ?? '0x0')),
    transactionHash: tx.hash,
    transactionPosition: Number(BigInt(tx.transactionIndex ?? '0x0')),
  };
  const visit = (f: CallFrame, traceAddress: number[]) => {
    const isTop = traceAddress.length === 0;
    const gas = isTop ? BigInt(tx.gas) - intrinsic : BigInt(f.gas);
    const gasUsed = isTop ? BigInt(f.gasUsed) - intrinsic : BigInt(f.gasUsed);
    const kind = f.type.toUpperCase();
    const children = f.calls ?? [];
    let trace: ParityTrace;
    if (kind === 'CREATE' || kind === 'CREATE2') {
      trace = {
        action: {
          from: f.from,
          gas: quantity(gas),
          init: f.input,
          value: f.value ?? '0x0',
          creationMethod: kind.toLowerCase(),
        },
        result: f.to ? { address: f.to, code: f.output ?? '0x', gasUsed: quantity(gasUsed) } : null,
        ...common,
        subtraces: children.length,
        traceAddress,
        type: 'create',
      };
    } else if (kind === 'SELFDESTRUCT') {
      trace = {
        action: { address: f.from, refundAddress: callee(f), balance: f.value ?? '0x0' },
        result: null,
        ...common,
        subtraces: children.length,
        traceAddress,
        type: 'suicide',
      };
    } else {
      trace = {
        action: {
          from: f.from,
          callType: kind.toLowerCase(),
          gas: quantity(gas),
          input: f.input,
          to: callee(f),
          value: f.value ?? '0x0',
        },
        result: { gasUsed: quantity(gasUsed), output: f.output ?? '0x' },
        ...common,
        subtraces: children.length,
        traceAddress,
        type: 'call',
      };
    }
    if (f.error) {
      trace.error = parityError(f.error);
      // A revert still returns data and used gas; other failures consume the frame and return nothing.
      if (f.error !== 'execution reverted') delete trace.result;
    }
    out.push(trace);
    children.forEach((c, i) => visit(c, [...traceAddress, i]));
  };
  visit(top, []);
  return out;
}
