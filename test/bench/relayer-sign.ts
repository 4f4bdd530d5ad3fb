/**
 * `npm run bench -- relayer-sign`: the CPU the relayer spends building one claim transaction, ethers
 * against src/common/eth + src/relayer/claim/calldata.ts (issue 12, item 3), in the same process and run:
 *  - calldata: claimMessage and claimMessageWithProof (a 20-entry proof) of random rows, ethers' Interface
 *    against the hand encoder;
 *  - sign: sign + serialize + transaction hash of a claim, ethers' Wallet (Transaction object, keccak256
 *    of the hex) against the private-key signer (noble secp256k1, our RLP, the fast keccak over bytes);
 *  - claim: both together, as the relayer does per claim.
 * Rounds alternate ethers/ours (BENCH_SIGN_ROUNDS, default 5; BENCH_SIGN_OPS operations each, default
 * 2,000) so both see the same machine load; the median round of each is printed as operations per CPU
 * second (process.cpuUsage: user + system) and the ratio. Prints the load average.
 */
import { loadavg } from 'node:os';
import { Wallet, keccak256 as ethersKeccak } from 'ethers';
import { L1MessageServiceInterface, L2MessageServiceInterface } from '../../generated/contracts/abi/index.js';
import { bytesToHex, hexToBytes } from '../../src/common/eth/hex.js';
import { keccak256 } from '../../src/common/eth/keccak.js';
import {
  encodeClaimMessageCall,
  encodeClaimMessageWithProofCall,
  type ProvenMessage,
} from '../../src/relayer/claim/calldata.js';
import { createSigner, toTransaction, type UnsignedTx } from '../../src/relayer/signer.js';

const ROUNDS = Number(process.env.BENCH_SIGN_ROUNDS ?? 5);
const OPS = Number(process.env.BENCH_SIGN_OPS ?? 2_000);
const KEY = `0x${'3c'.repeat(32)}`;

const hex = (n: number, salt = 0) =>
  `0x${Buffer.from(Array.from({ length: n }, (_, i) => (i * 131 + n + salt * 17) & 0xff)).toString('hex')}`;
/** Distinct rows (so no cache of any layer sees the same input twice in a row), shaped as the bench's messages. */
const messages: ProvenMessage[] = Array.from({ length: 64 }, (_, i) => ({
  from: hex(20, i),
  to: `0x${(i + 1).toString(16).padStart(40, '0')}`,
  fee: (10n ** 15n + BigInt(i)).toString(),
  value: (BigInt(i) * 10n ** 12n).toString(),
  feeRecipient: '0x0000000000000000000000000000000000000000',
  calldata: i % 4 === 0 ? '0x' : hex(4 + 32 * (i % 5), i),
  nonce: String(1_000 + i),
  proof: Array.from({ length: 20 }, (_, k) => hex(32, i * 20 + k)),
  leafIndex: i,
  merkleRoot: hex(32, -i),
}));

const ethersCalldata = (m: ProvenMessage, i: number) =>
  i % 2 === 0
    ? L2MessageServiceInterface.encodeFunctionData('claimMessage', [
        m.from,
        m.to,
        m.fee,
        m.value,
        m.feeRecipient,
        m.calldata,
        m.nonce,
      ])
    : L1MessageServiceInterface.encodeFunctionData('claimMessageWithProof', [
        [m.proof, m.nonce, m.leafIndex, m.from, m.to, m.fee, m.value, m.feeRecipient, m.merkleRoot, m.calldata],
      ]);
const ourCalldata = (m: ProvenMessage, i: number) =>
  i % 2 === 0 ? encodeClaimMessageCall(m) : encodeClaimMessageWithProofCall(m);

const unsigned = (data: string, i: number): UnsignedTx => ({
  chainId: 59_141n,
  nonce: i,
  to: '0x5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a',
  data,
  value: 0n,
  gasLimit: 120_000n + BigInt(i % 7),
  maxFeePerGas: 2_000_000_000n,
  maxPriorityFeePerGas: 1_000_000_000n,
});

type Op = (i: number) => Promise<unknown> | unknown;

/** CPU microseconds per operation over `OPS` operations. */
async function cpuPerOp(op: Op): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < OPS; i++) await op(i);
  const used = process.cpuUsage(start);
  return (used.user + used.system) / OPS;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function main(): Promise<void> {
  const wallet = new Wallet(KEY);
  const signer = await createSigner({ type: 'private-key', privateKey: KEY });
  const fixedData = ourCalldata(messages[1]!, 1);
  // The two paths must agree before their costs are compared.
  const probe = unsigned(fixedData, 7);
  if ((await signer.signTransaction(probe)) !== (await wallet.signTransaction(toTransaction(probe))))
    throw new Error('signers disagree');
  messages.forEach((m, i) => {
    if (ethersCalldata(m, i) !== ourCalldata(m, i)) throw new Error(`calldata ${i} differs`);
  });

  const cases: { name: string; ethers: Op; ours: Op }[] = [
    {
      name: 'calldata',
      ethers: (i) => ethersCalldata(messages[i % 64]!, i),
      ours: (i) => ourCalldata(messages[i % 64]!, i),
    },
    {
      name: 'sign+serialize+hash',
      ethers: async (i) => ethersKeccak(await wallet.signTransaction(toTransaction(unsigned(fixedData, i)))),
      ours: async (i) => bytesToHex(keccak256(hexToBytes(await signer.signTransaction(unsigned(fixedData, i))))),
    },
    {
      name: 'claim (all of it)',
      ethers: async (i) =>
        ethersKeccak(await wallet.signTransaction(toTransaction(unsigned(ethersCalldata(messages[i % 64]!, i), i)))),
      ours: async (i) =>
        bytesToHex(keccak256(hexToBytes(await signer.signTransaction(unsigned(ourCalldata(messages[i % 64]!, i), i))))),
    },
  ];
  console.log(
    `${ROUNDS} alternating rounds of ${OPS} operations each; load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  // Warm both paths up (JIT) before measuring.
  for (const c of cases) {
    for (let i = 0; i < 300; i++) {
      await c.ethers(i);
      await c.ours(i);
    }
  }
  for (const c of cases) {
    const e: number[] = [];
    const o: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      e.push(await cpuPerOp(c.ethers));
      o.push(await cpuPerOp(c.ours));
    }
    const [me, mo] = [median(e), median(o)];
    console.log(
      `${c.name.padEnd(22)} ethers ${me.toFixed(1).padStart(7)} µs CPU/op (${Math.round(1e6 / me)}/s)   ours ${mo.toFixed(1).padStart(7)} µs CPU/op (${Math.round(1e6 / mo)}/s)   ${(me / mo).toFixed(2)}x`,
    );
  }
  console.log(
    `load average after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
}
