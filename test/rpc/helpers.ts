import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import solc from 'solc';
import { ethers } from 'ethers';
import { startAnvil, type Anvil } from '../../src/devnet/anvil.js';
import { loadRpcConfig, startRpc, type ProofBackend, type RpcConfig } from '../../src/rpc/index.js';
import type { DbClient } from '../../src/common/db/client.js';
import type { Common } from '../../src/common/kernel.js';
import { testCommon } from '../helpers/common.js';
import { transportFromEnv } from '../helpers/transport.js';

export const MNEMONIC = 'test test test test test test test test test test test junk';
export const wallet = (i: number, provider?: ethers.Provider) =>
  ethers.HDNodeWallet.fromPhrase(MNEMONIC, undefined, `m/44'/60'/0'/0/${i}`).connect(provider ?? null);

export interface RpcReply {
  jsonrpc: string;
  id: unknown;
  result?: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  error?: { code: number; message: string; data?: unknown };
}

export async function post(
  url: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

let nextId = 1;
export async function call(url: string, method: string, params: unknown[] = []): Promise<RpcReply> {
  const { text } = await post(url, JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }));
  return JSON.parse(text) as RpcReply;
}

/** Calls and returns the result, failing with the error message otherwise. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function result(url: string, method: string, params: unknown[] = []): Promise<any> {
  const r = await call(url, method, params);
  if (r.error) throw new Error(`${method}: ${r.error.code} ${r.error.message}`);
  return r.result;
}

/** Sends a JSON-RPC body on to the node at `target` and pipes its answer back as it is (test proxies). */
export function forwardTo(
  target: URL,
  body: string | Buffer,
  res: ServerResponse,
  answered?: (bytes: number) => void,
): void {
  const up = request(
    {
      host: target.hostname,
      port: target.port,
      method: 'POST',
      path: '/',
      headers: { 'content-type': 'application/json' },
    },
    (r) => {
      res.writeHead(r.statusCode ?? 200, { 'content-type': 'application/json' });
      if (answered) {
        let bytes = 0;
        r.on('data', (c: Buffer) => (bytes += c.length));
        r.on('end', () => answered(bytes));
      }
      r.pipe(res);
    },
  );
  up.on('error', () => res.destroy());
  up.end(body);
}

/**
 * A JSON-RPC proxy in front of anvil that counts every method it forwards, so a test can prove that a
 * refused call never reached an upstream; `hold` makes chosen methods hang (to test ambiguous failures).
 */
export interface CountingUpstream {
  url: string;
  counts: Map<string, number>;
  total(): number;
  hold: Set<string>;
  /** Methods answered with JSON-RPC "method not found" (as if the node did not serve them). */
  refuse: Set<string>;
  /**
   * The next requests carrying a method fail, one listed failure each, in order: `http` = HTTP 502 from
   * a balancer in front of the node, `rpc` = the node's JSON-RPC error -32000 "header not found".
   */
  failNext: Map<string, ('http' | 'rpc')[]>;
  /** Methods answered this many milliseconds late (a slow node). */
  delay: Map<string, number>;
  /** Failures served so far, as `method:how`. */
  failed: string[];
  /** Bytes of every answer the node wrote, by the method of the request's first call, in order. */
  answers: Map<string, number[]>;
  close(): Promise<void>;
}

export async function countingUpstream(targetUrl: string): Promise<CountingUpstream> {
  const counts = new Map<string, number>();
  const hold = new Set<string>();
  const refuse = new Set<string>();
  const failNext = new Map<string, ('http' | 'rpc')[]>();
  const delay = new Map<string, number>();
  const failed: string[] = [];
  const answers = new Map<string, number[]>();
  const target = new URL(targetUrl);
  const server: Server = createServer((req: IncomingMessage, res) => {
    // The endpoint tries a newHeads WebSocket on every upstream; these plain HTTP nodes refuse it.
    if (req.method !== 'POST') {
      res.statusCode = 405;
      res.end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const parsed = JSON.parse(body.toString()) as { method: string; id: unknown } | { method: string; id: unknown }[];
      const calls = Array.isArray(parsed) ? parsed : [parsed];
      for (const c of calls) counts.set(c.method, (counts.get(c.method) ?? 0) + 1);
      if (calls.some((c) => hold.has(c.method))) return; // never answers
      const failing = calls.find((c) => (failNext.get(c.method)?.length ?? 0) > 0);
      if (failing) {
        const how = failNext.get(failing.method)!.shift()!;
        failed.push(`${failing.method}:${how}`);
        if (how === 'http') {
          res.writeHead(502, { 'content-type': 'text/plain' });
          res.end('bad gateway');
          return;
        }
        const error = (id: unknown) => ({ jsonrpc: '2.0', id, error: { code: -32000, message: 'header not found' } });
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(Array.isArray(parsed) ? calls.map((c) => error(c.id)) : error(failing.id)));
        return;
      }
      const refused = calls.find((c) => refuse.has(c.method));
      if (refused) {
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({ jsonrpc: '2.0', id: refused.id, error: { code: -32601, message: 'Method not found' } }),
        );
        return;
      }
      const first = calls[0]?.method ?? '';
      const forward = () =>
        forwardTo(target, body, res, (bytes) => (answers.get(first) ?? answers.set(first, []).get(first)!).push(bytes));
      const late = Math.max(0, ...calls.map((c) => delay.get(c.method) ?? 0));
      if (late > 0) setTimeout(forward, late);
      else forward();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    counts,
    total: () => [...counts.values()].reduce((a, b) => a + b, 0),
    hold,
    refuse,
    failNext,
    delay,
    failed,
    answers,
    close: () =>
      new Promise((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

export { testCommon };

/** Starts the endpoint in this process (port 0) with test defaults: no rate limit, fast head tracking. */
export async function startTestRpc(options: {
  db: DbClient;
  schema: string;
  upstreams: string[];
  env?: Record<string, string>;
  config?: Partial<RpcConfig>;
  proofBackend?: ProofBackend;
}): Promise<{ url: string; common: Common; config: RpcConfig; stop(): Promise<void> }> {
  const config = loadRpcConfig(
    {
      RPC_PORT: '0',
      RPC_UPSTREAM_URLS: options.upstreams.join(','),
      RPC_RATE_LIMIT_PER_SECOND: '0',
      RPC_UPSTREAM_HEAD_POLL_MS: '100',
      ...transportFromEnv(),
      ...options.env,
    },
    { dbSchema: options.schema, ...options.config },
  );
  const common = testCommon();
  const running = await startRpc({ common, db: options.db, config, proofBackend: options.proofBackend });
  return { url: running.url, common, config, stop: () => common.shutdown.run('test done') };
}

export async function chain(chainId = 1337): Promise<{ anvil: Anvil; provider: ethers.JsonRpcProvider }> {
  const anvil = await startAnvil({ port: 0, chainId });
  const provider = new ethers.JsonRpcProvider(anvil.url, chainId, { staticNetwork: true, cacheTimeout: -1 });
  return { anvil, provider };
}

/** Test-only contracts (compiled here with solc-js): nested calls, a revert, and every token standard's events. */
const SOURCE = `
// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;
contract Inner {
  event Ping(address indexed who, uint256 value);
  function ping() external payable returns (uint256) { emit Ping(msg.sender, msg.value); return 7; }
  function boom() external pure { revert("nope"); }
}
contract Outer {
  Inner public inner;
  event Noted(uint256 indexed n, bytes32 indexed tag, uint256 extra);
  event Transfer(address indexed from, address indexed to, uint256 value);
  event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value);
  event TransferBatch(address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values);
  constructor() { inner = new Inner(); }
  function go() external payable returns (uint256) { uint256 a = inner.ping{value: msg.value}(); try inner.boom() {} catch {} return a; }
  function bad() external pure { revert("outer failed"); }
  function note(uint256 n, bytes32 tag, uint256 count) external { for (uint256 i = 0; i < count; i++) emit Noted(n, tag, i); }
  function spawn() external returns (address) { return address(new Inner()); }
  function delegate() external returns (bool ok) { (ok, ) = address(inner).delegatecall(abi.encodeWithSignature("ping()")); }
  function pay(address payable to) external payable { to.transfer(msg.value); }
  function moveTokens(address to) external {
    emit Transfer(msg.sender, to, 1000);
    assembly { log4(0, 0, 0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef, caller(), to, 42) }
    emit TransferSingle(msg.sender, msg.sender, to, 5, 3);
    uint256[] memory ids = new uint256[](2); ids[0] = 6; ids[1] = 7;
    uint256[] memory vals = new uint256[](2); vals[0] = 10; vals[1] = 20;
    emit TransferBatch(msg.sender, msg.sender, to, ids, vals);
  }
}
`;

let compiled: { abi: ethers.InterfaceAbi; bytecode: string } | undefined;
export function outerArtifact(): { abi: ethers.InterfaceAbi; bytecode: string } {
  if (!compiled) {
    const input = {
      language: 'Solidity',
      sources: { 't.sol': { content: SOURCE } },
      settings: { evmVersion: 'cancun', outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } },
    };
    const out = JSON.parse(solc.compile(JSON.stringify(input))) as {
      errors?: { severity: string; formattedMessage: string }[];
      contracts: Record<string, Record<string, { abi: ethers.InterfaceAbi; evm: { bytecode: { object: string } } }>>;
    };
    const errors = (out.errors ?? []).filter((e) => e.severity === 'error');
    if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
    const c = out.contracts['t.sol']!.Outer!;
    compiled = { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
  }
  return compiled;
}

export async function deployOuter(signer: ethers.Signer): Promise<ethers.Contract> {
  const { abi, bytecode } = outerArtifact();
  const c = await new ethers.ContractFactory(abi, bytecode, signer).deploy();
  await c.waitForDeployment();
  return c as ethers.Contract;
}

/** Validates a method's result against its result schema in specs/rpc.openrpc.json (ajv, draft-07). */
export async function resultValidator(): Promise<(method: string, value: unknown) => string | undefined> {
  const { default: Ajv } = await import('ajv');
  const { loadRpcSpec } = await import('../../src/rpc/spec.js');
  const spec = await loadRpcSpec();
  const ajv = new Ajv({ allErrors: true });
  const validators = new Map(spec.dereferenced.methods.map((m) => [m.name, ajv.compile(m.result.schema as object)]));
  return (method, value) => {
    const v = validators.get(method);
    if (!v) return `no method ${method} in the spec`;
    return v(value) ? undefined : ajv.errorsText(v.errors);
  };
}
