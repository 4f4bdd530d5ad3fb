import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { toHex, type Hex } from 'viem';
import type { UserOperation } from 'viem/account-abstraction';
import { openTestDb } from '../helpers/db.js';
import { call, startTestRpc, testCommon } from '../rpc/helpers.js';
import {
  deployPaymaster,
  fund,
  simpleAccount,
  smartAccountClient,
  wire,
  type SimpleAccount,
} from '../helpers/smart-account.js';
import { isShapeRefusal, report, trial, type Trial } from './user-operation-verdicts.js';
import { loadRpcSpec } from '../../src/rpc/spec.js';
import { startDevnet, type Devnet } from '../../src/devnet/devnet.js';
import { devnetBundlerEnv } from '../../src/devnet/services/rpc.js';
import { CANONICAL_ENTRY_POINTS } from '../../src/rpc/bundler.js';

/**
 * Issue 36: every refusal of ours on the user-operation path is the bundler's. The same operations go straight
 * to the devnet's own bundler (Alto, as `l2stack dev` runs it) and through the endpoint, and must get the same
 * verdict (both accept, or the same class of refusal): the SDK's real operations (permissionless), the spec's
 * examples, property-generated v0.7 operations around every rule, and random spec-valid calls (the spec's
 * faker). The one difference allowed is a rule that spares Alto an exception of its own (-32603), listed in
 * docs/rpc.md. Per rule, the run prints the inputs tried and the verdicts equal.
 */

const require = createRequire(import.meta.url);
const coverage = (require('@open-rpc/test-coverage') as { default: (o: unknown) => Promise<unknown[]> }).default;
const JsonSchemaFakerRule = (
  require('@open-rpc/test-coverage/build/rules/json-schema-faker-rule') as { default: new (o?: unknown) => unknown }
).default;

const USER_OPERATION_METHODS = ['eth_sendUserOperation', 'eth_estimateUserOperationGas'];
const DEAD = '0x000000000000000000000000000000000000dEaD';

let devnet: Devnet;
let db: Awaited<ReturnType<typeof openTestDb>>;
let rpc: Awaited<ReturnType<typeof startTestRpc>>;
let entryPoint: string;
let account: SimpleAccount;
let paymaster: Hex;
const trials: Trial[] = [];
const silent = { onBegin() {}, onTestBegin() {}, onTestEnd() {}, onEnd() {} };
const ask = {
  ours: (m: string, p: unknown[]) => call(rpc.url, m, p),
  theirs: (m: string, p: unknown[]) => call(devnet.state.bundler!.url, m, p),
};
const tried = async (...args: Parameters<typeof trial>) => {
  const t = await trial(...args);
  trials.push(t);
  return t;
};
/** A nonce key no other operation of the run uses, so every operation stands on its own (nonce sequence 0). */
let nextKey = BigInt(Date.now()) << 8n;
const freshNonce = () => nextKey++ << 64n;

beforeAll(async () => {
  db = await openTestDb();
  devnet = await startDevnet({
    common: testCommon(),
    db: db.client,
    options: { historyHours: 0, coordinator: false, blockTimeMs: 500, bundler: true },
  });
  entryPoint = devnet.state.entryPoint!;
  rpc = await startTestRpc({
    db: db.client,
    schema: db.schema('rpc_userops'),
    upstreams: [devnet.state.l2.upstreamRpcUrl],
    env: devnetBundlerEnv(devnet.state, {}),
  });
  // accounts[12]'s SimpleAccount, funded and deployed (by the SDK, straight to Alto), sends the generated operations.
  account = await simpleAccount(devnet.state, 12);
  await fund(devnet.state, account.address, 10n ** 19n);
  const client = smartAccountClient(devnet.state, account, devnet.state.bundler!.url, true);
  const hash = await client.sendUserOperation({ calls: [{ to: DEAD, value: 0n, data: '0x' }] });
  expect((await client.waitForUserOperationReceipt({ hash, timeout: 60_000 })).success).toBe(true);
  // A paymaster that sponsors everything (the devnet has none), so generated operations with one can pass.
  paymaster = await deployPaymaster(devnet.state, 10n ** 19n);
}, 240_000);

afterAll(async () => {
  const { lines } = report(trials);
  console.info(
    `user operations, the same input straight to Alto and through the endpoint (${trials.length} pairs):\n  ${lines.join('\n  ')}`,
  );
  await rpc?.stop();
  await devnet?.stop();
  await db?.close();
});

/**
 * A v0.7 operation of `account` calling 0x…dEaD, gas fields set, its nonce on a fresh key; signed, or with the stub
 * signature.
 */
async function baseOperation(signed: boolean, members: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const prices = (await call(rpc.url, 'vendor_getUserOperationGasPrice', [])).result as {
    fast: { maxFeePerGas: Hex; maxPriorityFeePerGas: Hex };
  };
  const op = {
    sender: account.address,
    nonce: toHex(freshNonce()),
    callData: await account.encodeCalls([{ to: DEAD, value: 1n, data: '0x' }]),
    callGasLimit: toHex(100_000n),
    verificationGasLimit: toHex(300_000n),
    preVerificationGas: toHex(60_000n),
    maxFeePerGas: toHex(BigInt(prices.fast.maxFeePerGas) * 2n),
    maxPriorityFeePerGas: prices.fast.maxPriorityFeePerGas,
    signature: await account.getStubSignature(),
    ...members,
  };
  if (!signed) return op;
  const big = (k: string) =>
    typeof op[k as keyof typeof op] === 'string' ? BigInt(op[k as keyof typeof op] as string) : undefined;
  const viemOp = Object.fromEntries(Object.entries(op).map(([k, v]) => [k, v === null ? undefined : v]));
  const gas = Object.fromEntries(
    [
      'nonce',
      'callGasLimit',
      'verificationGasLimit',
      'preVerificationGas',
      'maxFeePerGas',
      'maxPriorityFeePerGas',
      'paymasterVerificationGasLimit',
      'paymasterPostOpGasLimit',
    ].map((k) => [k, big(k)]),
  );
  return {
    ...op,
    signature: await account.signUserOperation({ ...viemOp, ...gas } as unknown as UserOperation<'0.7'>),
  };
}

const expectAgreement = (mine: Trial[]) => expect(report(mine).disagreeing).toEqual([]);

describe("user operations: our verdict is the bundler's", () => {
  it("behavior: the SDK's own operations (permissionless, estimate then send, paymaster gas limits 0x0 copied from the estimate) get Alto's verdict, accepted", async () => {
    const client = smartAccountClient(devnet.state, account, rpc.url, false);
    const mine: Trial[] = [];
    const prepared = async () => {
      const op = await client.prepareUserOperation({
        calls: [{ to: DEAD, value: 1n, data: '0x' }],
        nonce: freshNonce(),
      });
      return { ...op, signature: await account.signUserOperation(op) };
    };
    const [a, b] = [await prepared(), await prepared()];
    // The issue's case: the SDK copies the estimate's paymaster gas limits (0x0) into an operation without a paymaster.
    expect(wire(a)).toMatchObject({ paymasterVerificationGasLimit: '0x0', paymasterPostOpGasLimit: '0x0' });
    expect(wire(a).paymaster).toBeUndefined();
    mine.push(await tried('sdk', 'eth_estimateUserOperationGas', ask, [wire(a), entryPoint]));
    mine.push(await tried('sdk', 'eth_sendUserOperation', ask, [wire(a), entryPoint], [wire(b), entryPoint]));
    expectAgreement(mine);
    expect(mine.map((t) => t.ours)).toEqual(['accepted', 'accepted']);
  });

  it("behavior: the spec's examples of eth_estimateUserOperationGas and eth_sendUserOperation, estimated both ways, get the same verdict", async () => {
    const { dereferenced } = await loadRpcSpec();
    const mine: Trial[] = [];
    for (const method of dereferenced.methods.filter((m) => USER_OPERATION_METHODS.includes(m.name))) {
      for (const example of (method as unknown as { examples: { params: { value: unknown }[] }[] }).examples) {
        // A send would hold once per devnet (its nonce), so each example's operation is estimated both ways.
        mine.push(
          await tried(
            `example of ${method.name}`,
            'eth_estimateUserOperationGas',
            ask,
            example.params.map((p) => p.value),
          ),
        );
      }
    }
    expect(mine).toHaveLength(2);
    expectAgreement(mine);
  });

  it(
    'behavior: property-generated v0.7 operations around every rule (factory, paymaster members, eip7702Auth, stateOverride) get the same verdict both ways',
    { timeout: 600_000 },
    async () => {
      const absentOrNull = <T>(a: fc.Arbitrary<T>) => fc.option(fc.oneof(fc.constant(null), a), { nil: undefined });
      const bytes = fc.uint8Array({ maxLength: 24 }).map((b) => toHex(b));
      const address = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => toHex(b));
      const gas = fc.bigInt({ min: 0n, max: 1n << 20n }).map((n) => toHex(n));
      const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
      const sigWord = fc
        .oneof(
          fc.constantFrom(0n, 1n, 2n, n / 2n + 1n, n - 1n, n, 1n << 255n),
          fc.bigInt({ min: 0n, max: (1n << 256n) - 1n }),
        )
        .map((v) => toHex(v));
      const chainId = toHex(devnet.state.l2.chainId);
      // Mixed case whatever the EIP-55 checksum, as the faker writes addresses (Alto reads them).
      const anyCase = fc
        .tuple(address, fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }))
        .map(([a, up]) => `0x${[...a.slice(2)].map((c, i) => (up[i] ? c.toUpperCase() : c)).join('')}`);
      const auth = fc.record({
        chainId: fc.constantFrom(chainId, '0x0', '0x1'),
        address: anyCase,
        nonce: fc.constantFrom('0x0', '0x1'),
        yParity: fc.constantFrom('0x0', '0x1'),
        r: sigWord,
        s: sigWord,
      });
      const members = fc.record(
        {
          factory: absentOrNull(fc.constant(devnet.state.accountFactory!)),
          factoryData: absentOrNull(bytes),
          paymaster: absentOrNull(fc.oneof(address, fc.constant(paymaster))),
          paymasterVerificationGasLimit: absentOrNull(gas),
          paymasterPostOpGasLimit: absentOrNull(gas),
          paymasterData: absentOrNull(bytes),
          eip7702Auth: fc.option(
            fc.oneof({ weight: 1, arbitrary: fc.constant(null) }, { weight: 3, arbitrary: auth }),
            { nil: undefined, freq: 2 },
          ),
        },
        { requiredKeys: [] },
      );
      const slot = fc.bigInt({ min: 0n, max: 3n }).map((v) => `0x${v.toString(16).padStart(64, '0')}`);
      const override = fc.option(
        fc
          .tuple(
            address,
            fc.record(
              {
                state: fc.dictionary(slot, slot, { maxKeys: 1 }),
                stateDiff: fc.dictionary(slot, slot, { maxKeys: 1 }),
              },
              { requiredKeys: [] },
            ),
          )
          .map(([a, o]) => ({ [a]: o })),
        { nil: undefined },
      );
      const mine: Trial[] = [];
      const run = await fc.check(
        fc.asyncProperty(
          fc.constantFrom('eth_estimateUserOperationGas', 'eth_sendUserOperation'),
          members,
          override,
          async (method, m, stateOverride) => {
            const signed = method === 'eth_sendUserOperation';
            const tail =
              method === 'eth_estimateUserOperationGas' && stateOverride !== undefined ? [stateOverride] : [];
            const t = await tried(
              'generated',
              method,
              ask,
              [await baseOperation(signed, m), entryPoint, ...tail],
              [await baseOperation(signed, m), entryPoint, ...tail],
            );
            mine.push(t);
          },
        ),
        // Every run is kept (no shrinking): the report lists each disagreement with both answers.
        { numRuns: 60 },
      );
      const accepted = (side: 'ours' | 'theirs') => mine.filter((t) => t[side] === 'accepted').length;
      console.info(
        `user operations: ${mine.length} generated operations (fast-check seed ${run.seed}), accepted by Alto ${accepted('theirs')}, through the endpoint ${accepted('ours')}`,
      );
      expectAgreement(mine);
      expect(run.failed, `seed ${run.seed}: ${String(run.errorInstance)}`).toBe(false);
      // Each rule met inputs, and some operations were accepted both ways.
      for (const line of report(mine).lines.slice(0, 4)) expect(line, line).not.toMatch(/: 0 inputs tried/);
      expect(mine.filter((t) => t.ours === 'accepted' && t.theirs === 'accepted').length).toBeGreaterThan(0);
    },
  );

  it(
    "behavior: random spec-valid user operations (the spec's faker) get the same verdict both ways, none refused by Alto for its shape",
    { timeout: 300_000 },
    async () => {
      const { dereferenced } = await loadRpcSpec();
      const methods = dereferenced.methods
        .filter((m) => USER_OPERATION_METHODS.includes(m.name))
        // Half the calls name the EntryPoint the bundler serves, so operations get past its EntryPoint check
        // into simulation; the other half name any address, as the spec allows.
        .flatMap((m) => [
          { ...m, examples: [] },
          {
            ...m,
            examples: [],
            params: m.params.map((p) =>
              p.name === 'entryPoint' ? { ...p, schema: { type: 'string', enum: [entryPoint] } } : p,
            ),
          },
        ])
        .map((m) => ({ ...m, params: m.params.map((p) => ({ ...p, schema: fakeablePropertyNames(p.schema) })) }));
      expect(methods).toHaveLength(4);
      const mine: Trial[] = [];
      const transport = async (_url: string, method: string, params: unknown[]) => {
        const t = await tried('faker', method, ask, params);
        mine.push(t);
        return t.oursReply;
      };
      await coverage({
        openrpcDocument: { ...dereferenced, methods, servers: [{ name: 'endpoint', url: rpc.url }] },
        transport,
        reporters: [silent],
        rules: [new JsonSchemaFakerRule({ numCalls: 20 })],
      });
      const v06 = mine.filter((t) => 'initCode' in (t.params[0] as object)).length;
      // What Alto answered to the calls a rule of ours refused (the issue's "refused by our own rules" count).
      // The faker's calls are spec-valid, so a refusal worded by us ("invalid params: param …") is a rule's.
      const byRule = mine.filter((t) => t.oursReply.error?.message.startsWith('invalid params: param') === true);
      const alto = new Map<string, number>();
      for (const t of byRule) alto.set(t.theirs, (alto.get(t.theirs) ?? 0) + 1);
      console.info(
        `user operations: ${mine.length} random calls (${v06} v0.6); ${byRule.length} refused by a rule of ours, Alto's verdicts on them: ${[...alto].map(([v, k]) => `${k}× ${v}`).join(', ')}`,
      );
      expectAgreement(mine);
      expect(
        mine.filter((t) => isShapeRefusal(t.oursReply)).map((t) => JSON.stringify(t.params).slice(0, 200)),
      ).toEqual([]);
      // Every error keeps an integer code, and the bundler was there for every call.
      expect(mine.filter((t) => t.oursReply.error !== undefined && !Number.isInteger(t.oursReply.error.code))).toEqual(
        [],
      );
      expect(mine.filter((t) => t.oursReply.error?.code === -32002)).toEqual([]);
      expect(mine).toHaveLength(80);
      expect(v06).toBeGreaterThan(0);
      expect(v06).toBeLessThan(mine.length);
    },
  );
});

describe('user operations: what we refuse ourselves', () => {
  it('error: the shape the spec used to accept ({sender, nonce, callData, signature}) is refused by Alto for its shape, and by us before it is forwarded', async () => {
    const loose = { sender: devnet.state.accounts[10]!.address, nonce: '0x0', callData: '0x', signature: '0x' };
    const t = await tried('loose shape', 'eth_sendUserOperation', ask, [loose, entryPoint]);
    // The classifier the differential relies on recognises Alto's refusal.
    expect(isShapeRefusal(t.theirsReply), JSON.stringify(t.theirsReply.error)).toBe(true);
    expect(t.oursReply.error?.code).toBe(-32602);
    expect(t.oursReply.error?.message).toMatch(/^invalid params: param 0 \(userOperation\)/);
    expect([t.ours, t.theirs]).toEqual(['invalid params', 'invalid params']);
  });

  it('error: an operation sent to the canonical EntryPoint of the other version is refused with -32602 naming both versions; Alto refuses it with -32602 too', async () => {
    const v06 = {
      sender: devnet.state.accounts[10]!.address,
      nonce: '0x0',
      initCode: '0x',
      callData: '0x',
      callGasLimit: '0x186a0',
      verificationGasLimit: '0x186a0',
      preVerificationGas: '0xc350',
      maxFeePerGas: '0x77359400',
      maxPriorityFeePerGas: '0x3b9aca00',
      paymasterAndData: '0x',
      signature: '0x',
    };
    const t = await tried('other version', 'eth_estimateUserOperationGas', ask, [v06, CANONICAL_ENTRY_POINTS['0.7']]);
    expect(t.oursReply.error?.message).toContain('is the EntryPoint v0.7 and the user operation has the v0.6 shape');
    expect([t.ours, t.theirs]).toEqual(['invalid params', 'invalid params']);
  });

  it('error: an eip7702Auth that recovers to no address is refused on eth_sendUserOperation with -32602 (Alto throws, -32603), and estimated as Alto estimates it', async () => {
    const eip7702Auth = {
      chainId: toHex(devnet.state.l2.chainId),
      address: DEAD,
      nonce: '0x0',
      yParity: '0x0',
      r: '0x0',
      s: '0x1',
    };
    const send = await tried(
      'unrecoverable auth',
      'eth_sendUserOperation',
      ask,
      [await baseOperation(true, { eip7702Auth }), entryPoint],
      [await baseOperation(true, { eip7702Auth }), entryPoint],
    );
    expect(send.oursReply.error).toMatchObject({
      code: -32602,
      message: expect.stringMatching(
        /at userOperation\.eip7702Auth: its signature \(r, s, yParity\) recovers to no address/,
      ) as unknown,
    });
    // Alto's answer has no code: an exception of its own ("expected valid r: 1 <= n < …").
    expect(send.theirsReply.error?.code).toBeUndefined();
    expect(send.theirs).toBe('internal error');
    const estimate = await tried('unrecoverable auth', 'eth_estimateUserOperationGas', ask, [
      await baseOperation(false, { eip7702Auth }),
      entryPoint,
    ]);
    expect(estimate.ours).toBe(estimate.theirs);
    expect(estimate.oursReply.error?.message).not.toMatch(/recovers to no address/);
  });
});

/**
 * json-schema-faker ignores propertyNames, so a map keyed by address (a state override) would be filled with
 * words the spec refuses: the faker's copy states the same map as patternProperties, which it honours.
 */
function fakeablePropertyNames<T>(node: T): T {
  if (Array.isArray(node)) return node.map(fakeablePropertyNames) as T;
  if (node === null || typeof node !== 'object') return node;
  const o = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, fakeablePropertyNames(v)])) as Record<
    string,
    unknown
  >;
  const names = o.propertyNames as { pattern?: string } | undefined;
  if (names?.pattern === undefined || typeof o.additionalProperties !== 'object') return o as T;
  const { propertyNames: _names, additionalProperties, ...rest } = o;
  return { ...rest, patternProperties: { [names.pattern]: additionalProperties }, additionalProperties: false } as T;
}
