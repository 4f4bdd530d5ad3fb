import type { Migration } from './common/db/migrations.js';
import { devnetMigrations } from './devnet/coordinator/migrations.js';
import { TOKEN_API_SCHEMA, tokenApiMigrations } from './token-api/migrations.js';
import { RELAYER_SCHEMA, relayerMigrations } from './relayer/db/migrations.js';
import { rpcMigrations } from './rpc/migrations.js';
import { STATE_SCHEMA, stateMigrations } from './state/migrations.js';

/**
 * Every service that owns database tables, with its Postgres schema and migrations. `l2stack migrate`
 * and each service's start-up read this list; a service adds itself here when it gains tables.
 */
export const SERVICE_SCHEMAS: Record<string, { schema: string; migrations: readonly Migration[] }> = {
  devnet: { schema: 'devnet', migrations: devnetMigrations },
  'token-api': { schema: TOKEN_API_SCHEMA, migrations: tokenApiMigrations },
  relayer: { schema: RELAYER_SCHEMA, migrations: relayerMigrations },
  rpc: { schema: 'rpc', migrations: rpcMigrations },
  state: { schema: STATE_SCHEMA, migrations: stateMigrations },
};
