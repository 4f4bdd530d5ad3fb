import type { DevnetState } from '../../src/devnet/state-file.js';

/**
 * Mixed traffic against a running `l2stack dev`: `concurrency` clients, each picking a random operation per
 * request. Hostile requests (numbers out of format, deep JSON, oversized filters) must be refused with a
 * clear error; an answer counts as failed only when the service broke (transport error, HTTP 5xx, -32603).
 */
type Outcome = 'ok' | 'refused' | string;

interface Operation {
  weight: number;
  run(): Promise<Outcome>;
}

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;
const int = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1));
const ORDERS = [
  'name',
  'symbol',
  'currentPrice',
  'priceUpdatedAt',
  'last24hVariation',
  'swaps',
  'buys',
  'sells',
  'fdv',
  'totalSupply',
];

async function httpGet(url: string, expect: 'ok' | 'refused'): Promise<Outcome> {
  const res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
  await res.arrayBuffer();
  if (res.status >= 500) return `HTTP ${res.status} ${new URL(url).pathname}`;
  if (expect === 'refused')
    return res.status === 400 ? 'refused' : `HTTP ${res.status} for a hostile ${new URL(url).pathname}`;
  return res.status === 200 ? 'ok' : `HTTP ${res.status} ${new URL(url).pathname}`;
}

let rpcId = 1;
async function rpc(url: string, body: unknown): Promise<Outcome> {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: text,
    signal: AbortSignal.timeout(30_000),
  });
  const answer = await res.text();
  if (res.status >= 500) return `HTTP ${res.status} from the RPC endpoint`;
  if (res.status === 413 || res.status === 429) return 'refused';
  const replies = (answer ? [JSON.parse(answer)].flat() : []) as { error?: { code: number; message: string } }[];
  const internal = replies.find((r) => r.error?.code === -32603);
  if (internal) return `-32603 ${internal.error!.message.slice(0, 80)}`;
  return replies.some((r) => r.error) ? 'refused' : 'ok';
}

const call = (method: string, params: unknown[]) => ({ jsonrpc: '2.0', id: rpcId++, method, params });

/**
 * The token API's own token list: every address in it has a record and prices (the state file also lists unpriced test
 * tokens).
 */
export async function listedTokens(state: DevnetState): Promise<string[]> {
  const res = await fetch(`${state.services.tokenApi!}/tokens?limit=100`);
  const page = (await res.json()) as { data: { contractAddress: string }[] };
  if (page.data.length === 0) throw new Error('the token API lists no tokens yet');
  return page.data.map((t) => t.contractAddress);
}

function operations(state: DevnetState, tokens: string[]): Operation[] {
  const token = state.services.tokenApi!;
  const endpoint = state.services.rpc!;
  const relayer = state.services.relayerApi!;
  const accounts = state.accounts.map((a) => a.address);
  const recentLogs = async () => {
    const res = await fetch(endpoint, {
      method: 'POST',
      body: JSON.stringify(call('eth_blockNumber', [])),
      headers: { 'content-type': 'application/json' },
    });
    const head = Number(((await res.json()) as { result: string }).result);
    const from = Math.max(0, head - int(10, 500));
    return rpc(endpoint, call('eth_getLogs', [{ fromBlock: `0x${from.toString(16)}`, toBlock: 'latest' }]));
  };
  const filterRound = async () => {
    const res = await fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(
        call('eth_newFilter', [
          { address: pick<string | string[]>([tokens, [pick(tokens)], state.l2.messageService]) },
        ]),
      ),
    });
    const made = (await res.json()) as { result?: string; error?: { code: number; message: string } };
    if (!made.result) return made.error?.code === -32603 ? `-32603 ${made.error.message}` : 'refused';
    // Some filters are polled and removed, others are left to expire (RPC_FILTER_TTL_SECONDS).
    const polled = await rpc(endpoint, call('eth_getFilterChanges', [made.result]));
    if (Math.random() < 0.5) await rpc(endpoint, call('eth_uninstallFilter', [made.result]));
    return polled;
  };
  const deep = (n: number) => `${'['.repeat(n)}1${']'.repeat(n)}`;
  return [
    {
      weight: 6,
      run: () =>
        httpGet(
          `${token}/tokens?page=${int(1, 3)}&limit=${int(1, 100)}&order=${pick(ORDERS)}&sort=${pick(['asc', 'desc'])}`,
          'ok',
        ),
    },
    { weight: 4, run: () => httpGet(`${token}/tokens/${pick(tokens)}`, 'ok') },
    { weight: 3, run: () => httpGet(`${token}/prices/${pick(tokens)}`, 'ok') },
    {
      weight: 2,
      run: () =>
        httpGet(
          `${token}/prices?addresses=${tokens
            .filter(() => Math.random() < 0.5)
            .concat(pick(tokens))
            .join(',')}`,
          'ok',
        ),
    },
    {
      weight: 1,
      run: () =>
        httpGet(
          `${token}/tokens/${state.nativeToken}/supply/${pick(['total', 'circulating'])}?format=${pick(['json', 'raw'])}`,
          'ok',
        ),
    },
    {
      weight: 1,
      run: () => httpGet(`${token}/tokens?limit=${pick(['1e309', '-1e309', '1e2', '0x10', '1.5'])}`, 'refused'),
    },
    { weight: 6, run: () => rpc(endpoint, call('eth_blockNumber', [])) },
    { weight: 4, run: () => rpc(endpoint, call('eth_getBalance', [pick(accounts), 'latest'])) },
    { weight: 4, run: () => rpc(endpoint, call('eth_call', [{ to: pick(tokens), data: '0x18160ddd' }, 'latest'])) },
    { weight: 3, run: recentLogs },
    { weight: 3, run: filterRound },
    {
      weight: 2,
      run: () =>
        rpc(
          endpoint,
          Array.from({ length: int(2, 20) }, () => call('eth_getBalance', [pick(accounts), 'latest'])),
        ),
    },
    {
      weight: 1,
      run: () => rpc(endpoint, `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":${deep(5_000)}}`),
    },
    {
      weight: 1,
      run: () =>
        rpc(
          endpoint,
          call('eth_newFilter', [
            { address: Array.from({ length: 5_000 }, (_, i) => `0x${(i + 1).toString(16).padStart(40, '0')}`) },
          ]),
        ),
    },
    { weight: 2, run: () => httpGet(`${relayer}/messages?limit=${int(1, 100)}`, 'ok') },
    { weight: 1, run: () => httpGet(`${relayer}/health/live`, 'ok') },
    { weight: 1, run: () => httpGet(`${relayer}/metrics`, 'ok') },
  ];
}

export function mixedTraffic(state: DevnetState, tokens: string[], concurrency: number, signal: AbortSignal) {
  const ops = operations(state, tokens);
  const total = ops.reduce((s, o) => s + o.weight, 0);
  const choose = () => {
    let r = Math.random() * total;
    for (const op of ops) if ((r -= op.weight) < 0) return op;
    return ops[0]!;
  };
  const tally = { ok: 0, refused: 0, failed: 0 };
  const kinds = new Map<string, number>();
  const client = async () => {
    while (!signal.aborted) {
      let outcome: Outcome;
      try {
        outcome = await choose().run();
      } catch (err) {
        outcome = `transport: ${(err as Error).message}`;
      }
      if (outcome === 'ok') tally.ok++;
      else if (outcome === 'refused') tally.refused++;
      else {
        tally.failed++;
        kinds.set(outcome, (kinds.get(outcome) ?? 0) + 1);
      }
    }
  };
  return {
    done: Promise.all(Array.from({ length: concurrency }, client)).then(() => undefined),
    counts: () => ({ ...tally }),
    failureKinds: () => [...kinds.entries()].sort((a, b) => b[1] - a[1]),
  };
}
