import { describe, expect, it } from 'vitest';
import { compileParamChecks } from '../../src/rpc/param-checks.js';
import { loadRpcSpec } from '../../src/rpc/spec.js';
import { LogFilterError, matches, parseLogFilter, unionAddresses } from '../../src/rpc/ws/log-filter.js';

const limits = { maxAddresses: 3, maxTopics: 4 };
const A = '0x' + 'aa'.repeat(20);
const B = '0x' + 'bb'.repeat(20);
const T1 = '0x' + '11'.repeat(32);
const T2 = '0x' + '22'.repeat(32);
const log = (address: string, topics: string[]) => ({
  address,
  topics,
  blockNumber: '0x1',
  blockHash: '0x' + '00'.repeat(32),
  logIndex: '0x0',
});

describe('logs subscription filter', () => {
  it('behavior: address lists, null positions and topic alternatives match as eth_getLogs does', () => {
    const f = parseLogFilter({ address: [A.toUpperCase().replace('0X', '0x'), B], topics: [null, [T1, T2]] }, limits);
    expect(matches(f, log(A, [T2, T1]))).toBe(true);
    expect(matches(f, log(B, [T1, T2]))).toBe(true);
    expect(matches(f, log(B, [T1]))).toBe(false); // no second topic
    expect(matches(f, log('0x' + 'cc'.repeat(20), [T1, T1]))).toBe(false);
    expect(matches(parseLogFilter(undefined, limits), log(A, []))).toBe(true);
    expect(unionAddresses([f, parseLogFilter({ address: A }, limits)])).toEqual([A, B]);
    expect(unionAddresses([f, parseLogFilter({}, limits)])).toBeUndefined();
  });

  it('error: filters over the caps name the count and the limit', () => {
    expect(() => parseLogFilter({ address: [A, B, A, B] }, limits)).toThrow(
      /4 addresses; at most 3 \(RPC_MAX_FILTER_ADDRESSES\)/,
    );
    expect(() => parseLogFilter({ topics: [[T1, T2], [T1, T2], T1] }, limits)).toThrow(
      /5 topics; at most 4 \(RPC_MAX_FILTER_TOPICS\)/,
    );
    expect(() => parseLogFilter({ address: [A, B, A, B] }, limits)).toThrow(LogFilterError);
  });

  it('error: filters of another shape never reach it: the spec refuses them first (-32602)', async () => {
    const spec = await loadRpcSpec();
    const subscribe = compileParamChecks(spec.dereferenced.methods).get('eth_subscribe')!;
    const bad: unknown[] = [
      { address: '0x12' },
      { address: 1 },
      { topics: [null, null, null, null, null] },
      { topics: ['0x1234'] },
      { fromBlock: '0x1' },
      [A],
    ];
    for (const filter of bad) expect(subscribe.check(['logs', filter])?.code, JSON.stringify(filter)).toBe(-32602);
    expect(subscribe.check(['logs', { address: [A, B], topics: [null, [T1, T2]] }])).toBeUndefined();
  });
});
