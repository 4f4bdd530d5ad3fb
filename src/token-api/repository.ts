import type { DbClient } from '../common/db/client.js';
import type { components } from '../../generated/token-api/schema.js';

export type Token = components['schemas']['Token'];
export type OrderColumn = components['schemas']['OrderColumns'];

export interface ListQuery {
  page: number;
  limit: number;
  isSecure: boolean | undefined;
  addresses: string[] | undefined;
  order: OrderColumn;
  sort: 'asc' | 'desc';
}

/** The token API's direct database access: only readiness pings it (answers come from the read model). */
export class TokenRepository {
  constructor(private readonly db: DbClient) {}

  async ping(): Promise<void> {
    await this.db.query('token_api.ping', (knex) => knex.raw('select 1'), { retries: 0 });
  }
}
