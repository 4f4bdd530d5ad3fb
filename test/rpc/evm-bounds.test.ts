import { describe, expect, it } from 'vitest';
import { RpcError } from '../../src/common/errors.js';
import { capGas } from '../../src/rpc/evm-bounds.js';
import { ComputeGate } from '../../src/rpc/upstream/gate.js';
import { loadRpcConfig } from '../../src/rpc/config.js';

const CAP = 50_000_000n;

describe('capGas', () => {
  it("args: an omitted gas becomes the cap, the rest of the call is kept and the caller's object is not changed", () => {
    const call = { to: '0x00000000000000000000000000000000000000aa', data: '0x01' };
    expect(capGas(call, CAP)).toEqual({ ...call, gas: '0x2faf080' });
    expect(call).not.toHaveProperty('gas');
  });

  it('args: a gas at or below the cap is sent as given', () => {
    expect(capGas({ gas: '0x2faf080' }, CAP)).toEqual({ gas: '0x2faf080' });
    expect(capGas({ gas: '0x5208' }, CAP)).toEqual({ gas: '0x5208' });
  });

  it('error: a gas above the cap is -32602 naming the cap and RPC_GAS_CAP, and the param', () => {
    let thrown: unknown;
    try {
      capGas({ gas: '0x2faf081' }, CAP, 'param 1 (calls)');
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(RpcError);
    expect((thrown as RpcError).code).toBe(-32602);
    expect((thrown as RpcError).data).toEqual({ param: 'calls', cap: 'RPC_GAS_CAP', limit: '0x2faf080' });
    expect((thrown as RpcError).message).toMatchInlineSnapshot(
      `"Invalid params: param 1 (calls): gas 50000001 is above this endpoint's gas cap of 50000000 (RPC_GAS_CAP); send gas at most 50000000, or leave gas out to get the cap"`,
    );
  });

  it('args: RPC_GAS_CAP, RPC_EVM_TIMEOUT_MS, RPC_EVM_MAX_CONCURRENT and RPC_RATE_LIMIT_MS_PER_UNIT default as geth (50M gas, 5 s) and 4 at once, 10 ms per unit', () => {
    const c = loadRpcConfig({ RPC_UPSTREAM_URLS: 'http://127.0.0.1:8545' });
    expect(c.evm).toEqual({ gasCap: 50_000_000n, timeoutMs: 5_000, maxConcurrent: 4 });
    expect(c.rateLimit.msPerUnit).toBe(10);
    expect(loadRpcConfig({ RPC_UPSTREAM_URLS: 'http://127.0.0.1:8545', RPC_GAS_CAP: '1000000000' }).evm.gasCap).toBe(
      1_000_000_000n,
    );
    expect(() => loadRpcConfig({ RPC_UPSTREAM_URLS: 'http://127.0.0.1:8545', RPC_GAS_CAP: '100' })).toThrow(
      /RPC_GAS_CAP/,
    );
  });
});

describe('ComputeGate', () => {
  it('behavior: past its slots a call waits, and a freed slot goes to the first waiter, not to a newcomer', async () => {
    const gate = new ComputeGate(1);
    const first = (await gate.enter(1_000))!;
    const order: string[] = [];
    const second = gate.enter(1_000).then((release) => {
      order.push('second');
      return release!;
    });
    expect(gate.queued).toBe(1);
    first();
    // The slot passed to the waiter: a newcomer finds none free.
    expect(await gate.enter(0)).toBeUndefined();
    const releaseSecond = await second;
    expect(order).toEqual(['second']);
    expect(gate.inflight).toBe(1);
    releaseSecond();
    releaseSecond(); // a second release frees nothing more
    expect(gate.inflight).toBe(0);
  });

  it('error: a waiter whose time runs out gets no slot and leaves the queue', async () => {
    const gate = new ComputeGate(1);
    const held = (await gate.enter(1_000))!;
    expect(await gate.enter(20)).toBeUndefined();
    expect(gate.queued).toBe(0);
    held();
    expect(gate.inflight).toBe(0);
    expect(await gate.enter(0)).toBeInstanceOf(Function);
  });
});
