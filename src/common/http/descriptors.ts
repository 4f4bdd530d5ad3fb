import { readFileSync } from 'node:fs';

/** The soft limit on open descriptors (Linux; undefined elsewhere or when unlimited). */
export function openFilesLimit(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The process's file descriptors as client connections may use them: every server of the process (token API,
 * RPC endpoint, relayer API, `l2stack dev` runs them together) takes one per accepted connection, and none
 * past `limit − reserve`, so HTTP_FD_RESERVE descriptors always stay free for our own database, chain and
 * upstream connections (and files). A client then meets a refused connection, never our EMFILE.
 */
export class DescriptorBudget {
  private reserved = 0;
  private held = 0;

  constructor(readonly limit: number | undefined) {}

  /** Keeps at least `count` descriptors out of the clients' reach (the largest asked for wins). */
  keep(count: number): void {
    this.reserved = Math.max(this.reserved, count);
  }

  /** The reserve kept: HTTP_FD_RESERVE, but never more than half the limit (a low `ulimit -n` still serves clients). */
  get reserve(): number {
    return this.limit === undefined ? this.reserved : Math.min(this.reserved, Math.floor(this.limit / 2));
  }

  /** Whether HTTP_FD_RESERVE had to be cut to half the limit. */
  get reserveCut(): boolean {
    return this.reserve < this.reserved;
  }

  /** Client connections all servers of the process may hold at once (Infinity when the limit is unknown). */
  get clientCap(): number {
    return this.limit === undefined ? Infinity : Math.max(1, this.limit - this.reserve);
  }

  /** Client connections held now. */
  get open(): number {
    return this.held;
  }

  take(): boolean {
    if (this.held >= this.clientCap) return false;
    this.held++;
    return true;
  }

  release(): void {
    if (this.held > 0) this.held--;
  }
}

/** The one budget of this process. */
export const descriptors = new DescriptorBudget(openFilesLimit());
