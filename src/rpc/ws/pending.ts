import type { Logger } from '../../common/log.js';
import type { UpstreamCall } from './types.js';

/**
 * newPendingTransactions: one pending-transaction filter on the node per replica, polled every
 * RPC_WS_PENDING_POLL_MS while someone subscribes, its hashes fanned out by the hub.
 */
export class PendingPoll {
  private timer: NodeJS.Timeout | undefined;
  private filter: string | undefined;
  private polling = false;

  constructor(
    private readonly o: { upstream: UpstreamCall; logger: Logger; pollMs: number; onHashes(hashes: string[]): void },
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.poll(), this.o.pollMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const filter = this.filter;
    this.filter = undefined;
    if (filter) void this.o.upstream('eth_uninstallFilter', [filter]).catch(() => undefined);
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      this.filter ??= (await this.o.upstream('eth_newPendingTransactionFilter', [])) as string;
      const hashes = (await this.o.upstream('eth_getFilterChanges', [this.filter])) as string[];
      if (hashes.length > 0) this.o.onHashes(hashes);
    } catch (err) {
      // The node forgot the filter (restart, another node behind a balancer): make a new one next time.
      this.filter = undefined;
      this.o.logger.debug({ err }, 'pending-transaction poll failed');
    } finally {
      this.polling = false;
    }
  }
}
