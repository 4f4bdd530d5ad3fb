import type { HttpLimits } from '../../src/common/config/http-env.js';
import { migrate } from '../../src/common/db/migrations.js';
import { listen, type RunningServer } from '../../src/common/http/server.js';
import { createRelayerApp } from '../../src/relayer/api/app.js';
import { relayerMigrations } from '../../src/relayer/db/migrations.js';
import { RelayerRepository } from '../../src/relayer/db/repository.js';
import { openTestDb } from '../helpers/db.js';
import { testCommon } from '../token-api/helpers.js';

/**
 * The relayer's HTTP API alone, over a test database and without chains: what an attacker reaches on
 * API_PORT. Readiness reports only the database (the chain checks need nodes, which these tests do not).
 */
export async function startRelayerApi(options: {
  db: Awaited<ReturnType<typeof openTestDb>>;
  limits?: HttpLimits;
}): Promise<RunningServer> {
  const schema = options.db.schema('relayer');
  const client = options.db.client;
  await client.query('test.servers', (knex) => migrate(knex, schema, relayerMigrations));
  const common = testCommon();
  const app = createRelayerApp(
    {
      repo: new RelayerRepository(client, schema),
      db: client,
      registry: common.metrics,
      readiness: async () => [{ name: 'database', ok: true }],
    },
    common.logger,
    { validateResponses: true },
  );
  return listen(app, '127.0.0.1', 0, 'relayer API', { limits: options.limits, logger: common.logger });
}
