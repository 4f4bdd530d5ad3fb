import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DbClient } from '../../src/common/db/client.js';
import { followReadModel } from '../../src/token-api/read-model/follower.js';
import { waitFor } from '../helpers/chain.js';
import { addr, seedTokens, startTestApi, type TestApi } from './helpers.js';

/**
 * A replica's read model and its change notifications. db.listen may return before LISTEN holds (on
 * PostgreSQL its connection comes up on its own, after the replica's first load has often begun), so a
 * change committed in between reaches the replica only if the follower loads once LISTEN holds.
 */
let t: TestApi;

beforeAll(async () => {
  t = await startTestApi({}, undefined, { validateResponses: false });
});
afterAll(async () => {
  await t?.close();
});

it('behavior: a change committed before LISTEN holds is served once it holds, without waiting for the fallback poll', async () => {
  let letListen!: () => void;
  const gate = new Promise<void>((resolve) => (letListen = resolve));
  // The database's own listen, begun only when the test opens the gate: the widest window PostgreSQL allows.
  const db: DbClient = {
    ...t.db.client,
    listen: (channel, onPayload, options) => {
      const real = gate.then(() => t.db.client.listen(channel, onPayload, options));
      return Promise.resolve(async () => (await real)());
    },
  };
  const controller = new AbortController();
  const follower = await followReadModel({
    db,
    schema: t.schema,
    logger: t.common.logger,
    pollMs: 3_600_000,
    signal: controller.signal,
  });
  try {
    const token = addr(0x901);
    await seedTokens(t, [{ address: token }]);
    expect(follower.model.token(token)).toBeUndefined(); // committed after the first load, before LISTEN
    letListen();
    await waitFor(
      'the replica to serve the token committed before LISTEN held',
      async () => follower.model.token(token),
      30_000,
      20,
    );
  } finally {
    controller.abort();
    await follower.stop();
  }
});
