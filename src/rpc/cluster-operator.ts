import type { Worker } from 'node:cluster';
import type { RequestListener } from 'node:http';
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue, type Registry } from 'prom-client';
import { operatorListener, type Check } from '../common/http/operator.js';

/**
 * RPC_OPERATOR_PORT under RPC_WORKERS > 1: the primary serves the operator port and asks every worker
 * over the cluster channel. Each worker keeps its own registry and checks (it is a whole endpoint), so
 * /metrics is every worker's series with a `worker` label (counters and histograms add up with
 * sum by (...); a gauge such as the head block stays per worker rather than summed into nonsense), and
 * /health/ready is ready when every worker is, a failing check naming its worker.
 */

const ASK_TIMEOUT_MS = 3_000;

interface Ask {
  l2stackRpcOperatorAsk: number;
  what: 'metrics' | 'ready';
}
interface Reply {
  l2stackRpcOperatorReply: number;
  metrics?: MetricObjectWithValues<MetricValue<string>>[];
  checks?: Check[];
}
const isAsk = (m: unknown): m is Ask =>
  typeof m === 'object' && m !== null && typeof (m as Ask).l2stackRpcOperatorAsk === 'number';
const isReply = (m: unknown): m is Reply =>
  typeof m === 'object' && m !== null && typeof (m as Reply).l2stackRpcOperatorReply === 'number';

/** In a worker: answers its primary's operator questions from this worker's registry and checks. */
export function answerOperatorAsks(o: { metrics: Registry; readiness: (view: 'operator') => Promise<Check[]> }): void {
  process.on('message', (m: unknown) => {
    if (!isAsk(m)) return;
    const answer: Promise<Omit<Reply, 'l2stackRpcOperatorReply'>> =
      m.what === 'metrics'
        ? o.metrics.getMetricsAsJSON().then((metrics) => ({ metrics: metrics as Reply['metrics'] }))
        : o.readiness('operator').then((checks) => ({ checks }));
    void answer
      .catch((err: unknown) => ({
        checks: [{ name: 'worker', ok: false, detail: `could not answer: ${(err as Error).message}` }],
      }))
      .then((reply) => process.send?.({ l2stackRpcOperatorReply: m.l2stackRpcOperatorAsk, ...reply } satisfies Reply));
  });
}

let nextAsk = 1;

/** Asks every live worker; a worker that does not answer within ASK_TIMEOUT_MS is left out (undefined). */
function askAll(workers: Iterable<Worker>, what: Ask['what']): Promise<{ worker: Worker; reply: Reply | undefined }[]> {
  return Promise.all(
    [...workers].map(
      (worker) =>
        new Promise<{ worker: Worker; reply: Reply | undefined }>((resolve) => {
          const id = nextAsk++;
          const finish = (reply: Reply | undefined) => {
            clearTimeout(timer);
            worker.off('message', onMessage);
            resolve({ worker, reply });
          };
          const onMessage = (m: unknown) => {
            if (isReply(m) && m.l2stackRpcOperatorReply === id) finish(m);
          };
          const timer = setTimeout(() => finish(undefined), ASK_TIMEOUT_MS);
          worker.on('message', onMessage);
          try {
            worker.send({ l2stackRpcOperatorAsk: id, what } satisfies Ask);
          } catch {
            finish(undefined);
          }
        }),
    ),
  );
}

/** The primary's operator listener over its live workers (`expected`: how many there should be). */
export function clusterOperatorListener(workers: () => Iterable<Worker>, expected: number): RequestListener {
  const metrics = {
    contentType: AggregatorRegistry.PROMETHEUS_CONTENT_TYPE,
    async metrics() {
      const answers = await askAll(workers(), 'metrics');
      // A `worker` label on every sample keeps each worker's series apart through the aggregator.
      const labelled = answers
        .filter((a) => a.reply?.metrics)
        .map(({ worker, reply }) =>
          reply!.metrics!.map((m) => ({
            ...m,
            values: m.values.map((v) => ({ ...v, labels: { ...v.labels, worker: String(worker.id) } })),
          })),
        );
      return AggregatorRegistry.aggregate(labelled as Parameters<typeof AggregatorRegistry.aggregate>[0]).metrics();
    },
  } as unknown as Registry;
  const readiness = async (): Promise<Check[]> => {
    const answers = await askAll(workers(), 'ready');
    const answered = answers.filter((a) => a.reply?.checks);
    const merged = new Map<string, Check>();
    for (const { worker, reply } of answered) {
      for (const c of reply!.checks!) {
        const seen = merged.get(c.name);
        if (!seen) merged.set(c.name, c.ok ? c : { ...c, detail: `worker ${worker.id}: ${c.detail ?? 'failed'}` });
        else if (seen.ok && !c.ok) merged.set(c.name, { ...c, detail: `worker ${worker.id}: ${c.detail ?? 'failed'}` });
      }
    }
    const workersCheck: Check = {
      name: 'workers',
      ok: answered.length >= expected,
      detail: `${answered.length} of ${expected} workers answered`,
    };
    return [...merged.values(), workersCheck];
  };
  return operatorListener({ metrics, readiness });
}
