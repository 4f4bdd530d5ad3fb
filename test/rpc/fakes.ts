import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ProofBackend } from '../../src/rpc/index.js';

/** A tiny ERC-4337 bundler speaking JSON-RPC with canned answers; it records the method names it saw. */
export async function fakeBundler(
  vendorPrefix = 'pimlico_',
): Promise<{ url: string; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = [];
  const answers: Record<string, unknown> = {
    eth_sendUserOperation: `0x${'ab'.repeat(32)}`,
    eth_estimateUserOperationGas: {
      preVerificationGas: '0xb000',
      verificationGasLimit: '0x10000',
      callGasLimit: '0x5000',
      paymasterVerificationGasLimit: null,
      paymasterPostOpGasLimit: null,
    },
    eth_supportedEntryPoints: ['0x0000000071727De22E5E9d8BAf0edAc6f37da032'],
    eth_getUserOperationByHash: null,
    eth_getUserOperationReceipt: null,
    [`${vendorPrefix}getUserOperationGasPrice`]: {
      slow: { maxFeePerGas: '0x10', maxPriorityFeePerGas: '0x1' },
      standard: { maxFeePerGas: '0x20', maxPriorityFeePerGas: '0x2' },
      fast: { maxFeePerGas: '0x30', maxPriorityFeePerGas: '0x3' },
    },
    [`${vendorPrefix}getUserOperationStatus`]: { status: 'not_found', transactionHash: null },
  };
  const server: Server = createServer((req, res) => {
    // The endpoint tries a newHeads WebSocket on every upstream; these plain HTTP nodes refuse it.
    if (req.method !== 'POST') {
      res.statusCode = 405;
      res.end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const { id, method } = JSON.parse(Buffer.concat(chunks).toString()) as { id: number; method: string };
      seen.push(method);
      res.setHeader('content-type', 'application/json');
      if (!(method in answers)) {
        res.end(
          JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32601, message: `bundler: no method ${method}` } }),
        );
        return;
      }
      res.end(JSON.stringify({ jsonrpc: '2.0', id, result: answers[method] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () =>
      new Promise((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

/** A state manager stand-in: answers a well-formed inclusion proof and records what it was asked. */
export function fakeProofBackend(): ProofBackend & { asked: unknown[][] } {
  const asked: unknown[][] = [];
  const proof = (key: string) => ({
    key,
    leafIndex: 2,
    proof: {
      proofRelatedNodes: Array.from({ length: 42 }, (_, i) => `0x${i.toString(16).padStart(2, '0').repeat(32)}`),
      value: `0x${'00'.repeat(32)}`,
    },
  });
  return {
    asked,
    async getProof(address, storageKeys, block) {
      asked.push([address, storageKeys, block]);
      return { accountProof: proof(address), storageProofs: storageKeys.map(proof) };
    },
  };
}
