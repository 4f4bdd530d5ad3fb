import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The client a request comes from (the rate limiter's identity: socket address or trusted
 * X-Forwarded-For hop), visible to handlers that count per client (live filters). Carried in async
 * context because the Router calls handlers with their params only and the handler context is built once.
 */
const store = new AsyncLocalStorage<string>();

export const withClient = <T>(client: string | undefined, fn: () => T): T => (client === undefined ? fn() : store.run(client, fn));

/** undefined outside a request (library use, tests calling handlers directly). */
export const currentClient = (): string | undefined => store.getStore();
