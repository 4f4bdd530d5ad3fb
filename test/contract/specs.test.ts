import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { validateOpenRPCDocument } from '@open-rpc/schema-utils-js';
import { parse } from 'yaml';

const read = (name: string) => readFileSync(new URL(`../../specs/${name}`, import.meta.url), 'utf8');

describe('spec documents', () => {
  for (const name of ['token-api.openapi.yaml', 'relayer-api.openapi.yaml']) {
    it(`behavior: ${name} is a valid OpenAPI 3.0.3 document`, async () => {
      const doc = parse(read(name));
      expect(doc.openapi).toBe('3.0.3');
      expect(doc.info.version).toBe('0.1.0');
      const result = await new Validator().validate(doc);
      expect(result.errors ?? []).toEqual([]);
      expect(result.valid).toBe(true);
    });
  }

  it('behavior: token API paths carry no version prefix and cover the interface', () => {
    const doc = parse(read('token-api.openapi.yaml'));
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/prices',
      '/prices/{contractAddress}',
      '/prices/{contractAddress}/candles',
      '/tokens',
      '/tokens/{contractAddress}',
      '/tokens/{contractAddress}/price-sources',
      '/tokens/{contractAddress}/supply/circulating',
      '/tokens/{contractAddress}/supply/total',
    ]);
    expect(doc.components.schemas.OrderColumns.enum).toEqual([
      'name',
      'symbol',
      'decimals',
      'contractAddress',
      'currentPrice',
      'priceUpdatedAt',
      'createdAt',
      'updatedAt',
      'last24hVariation',
      'last24hVariationAbsolute',
      'sells',
      'buys',
      'swaps',
      'isPossibleSpam',
      'totalSupply',
      'fdv',
    ]);
  });

  it('behavior: every 4xx/5xx response of the HTTP APIs is problem+json', () => {
    for (const name of ['token-api.openapi.yaml', 'relayer-api.openapi.yaml']) {
      const doc = parse(read(name));
      for (const [path, item] of Object.entries<
        Record<string, { responses: Record<string, { content?: Record<string, unknown>; $ref?: string }> }>
      >(doc.paths)) {
        for (const [status, response] of Object.values(item).flatMap((op) => Object.entries(op.responses))) {
          if (!/^[45]/.test(status)) continue;
          const resolved = response.$ref ? doc.components.responses[response.$ref.split('/').pop()!] : response;
          const types = Object.keys(resolved.content ?? {});
          // The one documented exception: readiness answers 503 with its checks as plain JSON.
          if (path === '/health/ready' && status === '503') continue;
          expect(types, `${name} ${path} ${status}`).toEqual(['application/problem+json']);
        }
      }
    }
  });

  it('behavior: rpc.openrpc.json is a valid OpenRPC 1.2 document', () => {
    const doc = JSON.parse(read('rpc.openrpc.json'));
    expect(doc.openrpc).toMatch(/^1\.2\./);
    expect(validateOpenRPCDocument(doc)).toBe(true);
  });

  it('behavior: the RPC spec lists every method the interface requires', () => {
    const doc = JSON.parse(read('rpc.openrpc.json'));
    const names = new Set((doc.methods as { name: string }[]).map((m) => m.name));
    const required = [
      'eth_chainId',
      'eth_blockNumber',
      'eth_getBalance',
      'eth_getCode',
      'eth_getStorageAt',
      'eth_getTransactionCount',
      'eth_call',
      'eth_estimateGas',
      'eth_gasPrice',
      'eth_feeHistory',
      'eth_getBlockByNumber',
      'eth_getBlockByHash',
      'eth_getBlockTransactionCountByNumber',
      'eth_getBlockTransactionCountByHash',
      'eth_getTransactionByHash',
      'eth_getTransactionByBlockNumberAndIndex',
      'eth_getTransactionReceipt',
      'eth_getBlockReceipts',
      'eth_getLogs',
      'eth_newFilter',
      'eth_newBlockFilter',
      'eth_getFilterChanges',
      'eth_getFilterLogs',
      'eth_uninstallFilter',
      'eth_sendRawTransaction',
      'eth_getProof',
      'eth_syncing',
      'net_version',
      'web3_clientVersion',
      'debug_traceTransaction',
      'debug_traceCall',
      'debug_traceBlockByNumber',
      'trace_transaction',
      'svc_getProof',
      'svc_estimateGas',
      'eth_sendUserOperation',
      'eth_estimateUserOperationGas',
      'eth_supportedEntryPoints',
      'eth_getUserOperationByHash',
      'eth_getUserOperationReceipt',
      'vendor_getUserOperationGasPrice',
      'vendor_getUserOperationStatus',
      'vendor_simulateAssetChanges',
    ];
    expect(required.filter((m) => !names.has(m))).toEqual([]);
    const forbidden = [...names].filter(
      (m) =>
        /^(admin|personal|miner|engine|anvil|evm|hardhat)_/.test(m) ||
        ['eth_sendTransaction', 'eth_sign', 'eth_accounts'].includes(m),
    );
    expect(forbidden).toEqual([]);
  });
});
