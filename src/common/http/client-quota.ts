/**
 * Clients at a count of 0 kept before they are swept: a returning client reuses its entry (no map insert and delete per
 * call).
 */
const IDLE_KEPT = 4_096;

/**
 * A count per client of something it holds (open connections, WebSocket sockets, calls in flight), capped at
 * `perClient` (0: no cap, nothing counted). `take` refuses past the cap; every granted take is given back with
 * `release` when the thing ends, so a client's count is what it holds now. A client back at 0 keeps its entry
 * until more than IDLE_KEPT such entries pile up, then they are all dropped: the map names at most the clients
 * holding something plus IDLE_KEPT others.
 */
export class ClientQuota {
  private readonly held = new Map<string, number>();
  private idle = 0;

  constructor(readonly perClient: number) {}

  take(client: string, n = 1): boolean {
    if (this.perClient === 0) return true;
    const now = this.held.get(client);
    if ((now ?? 0) + n > this.perClient) return false;
    if (now === 0) this.idle--;
    this.held.set(client, (now ?? 0) + n);
    return true;
  }

  release(client: string, n = 1): void {
    if (this.perClient === 0) return;
    const now = this.held.get(client);
    if (now === undefined || now === 0) return;
    const left = now - n;
    this.held.set(client, Math.max(0, left));
    if (left <= 0 && ++this.idle > IDLE_KEPT) this.sweep();
  }

  /**
   * Replaces every count with the ones given: for a stack that can recount what each client holds (uws/connections.ts
   * in src/rpc/transport).
   */
  reset(counts: ReadonlyMap<string, number>): void {
    if (this.perClient === 0) return;
    this.held.clear();
    this.idle = 0;
    for (const [client, n] of counts) if (n > 0) this.held.set(client, n);
  }

  private sweep(): void {
    for (const [client, n] of this.held) if (n === 0) this.held.delete(client);
    this.idle = 0;
  }
}
