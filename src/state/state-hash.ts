import type { StateHash } from './config.js';
import { keccakHashProvider, type HashProvider } from './hash.js';
import { poseidon2HashProvider } from './linea-hash.js';
import type { VersionedStore } from './store.js';

/** The provider behind each STATE_HASH value. */
export const hashProviderOf = (hash: StateHash): HashProvider =>
  hash === 'poseidon2' ? poseidon2HashProvider : keccakHashProvider;

/** The meta row that records which hash built the tree. */
export const STATE_HASH_META = 'state_hash';

export class StateHashMismatchError extends Error {
  constructor(
    readonly configured: StateHash,
    readonly stored: string,
  ) {
    super(
      `STATE_HASH is ${configured} but this database's state tree was built with ${stored}: ` +
        `set STATE_HASH=${stored}, or point the state manager at an empty schema to build a ${configured} tree`,
    );
    this.name = 'StateHashMismatchError';
  }
}

/**
 * Pins the tree's hash in the store on first use and refuses a different one afterwards: a tree's rows, keys
 * and roots only make sense under the hash that built them. A tree that has blocks but no record predates
 * the setting and was built with keccak.
 */
export async function pinStateHash(store: VersionedStore, configured: StateHash): Promise<void> {
  const recorded = await store.getMeta(STATE_HASH_META);
  const stored = recorded ?? ((await store.head()) ? 'keccak' : undefined);
  if (stored !== undefined && stored !== configured) throw new StateHashMismatchError(configured, stored);
  if (recorded === undefined) await store.setMeta(STATE_HASH_META, configured);
}
