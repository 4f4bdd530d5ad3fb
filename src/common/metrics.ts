import { Registry, collectDefaultMetrics, Counter, Gauge, Histogram } from 'prom-client';
import { descriptors } from './http/descriptors.js';

export { Counter, Gauge, Histogram, Registry };

/**
 * One registry per process so services running together (`l2stack dev`) share one /metrics view and
 * tests can create isolated registries without global state.
 */
export function createMetrics(options: { defaultMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'l2stack_' });
  descriptorMetrics(registry);
  return registry;
}

/** The process's descriptor budget (src/common/http/descriptors.ts), read when scraped. */
function descriptorMetrics(registry: Registry): void {
  const read = (name: string, help: string, value: () => number | undefined) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        const v = value();
        if (v !== undefined && Number.isFinite(v)) this.set(v);
      },
    });
  read(
    'l2stack_fd_limit',
    'Open file descriptors the process may hold (ulimit -n); absent when unlimited',
    () => descriptors.limit,
  );
  read(
    'l2stack_fd_reserve',
    'Descriptors kept free of client connections for our own database and chain connections (HTTP_FD_RESERVE)',
    () => descriptors.reserve,
  );
  read(
    'l2stack_client_connections_max',
    'Client connections all servers of the process accept at once: the limit less the reserve',
    () => descriptors.clientCap,
  );
  read(
    'l2stack_client_connections',
    'Client connections open now, all servers of the process together',
    () => descriptors.open,
  );
}

/** What counter, gauge and histogram take: the registry, the metric's name and help, and its label names. */
type MetricArgs<L extends string> = [registry: Registry, name: string, help: string, labelNames?: readonly L[]];

/** Returns the metric of that name when already registered (services sharing a registry), else creates it. */
function registered<M>(registry: Registry, name: string, create: () => M): M {
  return (registry.getSingleMetric(name) as M | undefined) ?? create();
}

export const counter = <L extends string>(...[registry, name, help, labelNames = []]: MetricArgs<L>): Counter<L> =>
  registered(registry, name, () => new Counter({ name, help, labelNames, registers: [registry] }));

export const gauge = <L extends string>(...[registry, name, help, labelNames = []]: MetricArgs<L>): Gauge<L> =>
  registered(registry, name, () => new Gauge({ name, help, labelNames, registers: [registry] }));

export function histogram<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[] = [],
  buckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
): Histogram<L> {
  return registered(registry, name, () => new Histogram({ name, help, labelNames, buckets, registers: [registry] }));
}
