import { describe, expect, it } from 'vitest';
import { Interface } from 'ethers';
import { createCalldataFilter } from '../../src/relayer/calldata-filter.js';

const functionInterface = 'function record(uint256 amount, bytes note)';
const iface = new Interface([functionInterface]);
const record = (amount: bigint, note = '0x') => iface.encodeFunctionData('record', [amount, note]);
const selector = iface.getFunction('record')!.selector;

describe('calldata filter', () => {
  it('behavior: matches on the selector and decoded arguments by name', () => {
    const f = createCalldataFilter({
      expression: `calldata.funcSignature == "${selector}" and calldata.amount > 0`,
      functionInterface,
    });
    expect(f.test(record(5n))).toEqual({ pass: true });
    expect(f.test(record(0n))).toEqual({ pass: false, reason: 'calldata does not match the calldata filter' });
  });

  it('behavior: uint256 comparisons are exact beyond 2^53', () => {
    const f = createCalldataFilter({ expression: 'calldata.amount > 9007199254740992', functionInterface });
    expect(f.test(record(9007199254740993n))).toEqual({ pass: true });
    expect(f.test(record(9007199254740992n)).pass).toBe(false);
  });

  it('behavior: hex strings compare regardless of letter case', () => {
    const f = createCalldataFilter({
      expression: `calldata.funcSignature == "${selector.toUpperCase().replace('0X', '0x')}" and calldata.note == "0xABCD"`,
      functionInterface,
    });
    expect(f.test(record(1n, '0xabcd'))).toEqual({ pass: true });
  });

  it('error: calldata of another function, or a missing argument, does not match and says why', () => {
    const f = createCalldataFilter({ expression: 'calldata.amount > 0', functionInterface });
    const other = new Interface(['function fail()']).encodeFunctionData('fail', []);
    const r = f.test(other);
    expect(r.pass).toBe(false);
    expect(r.pass === false && r.reason).toContain('could not be evaluated');
    const truncated = f.test(`${selector}00`);
    expect(truncated.pass === false && truncated.reason).toContain('does not decode as record(uint256,bytes)');
  });
});
