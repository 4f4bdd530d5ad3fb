/**
 * A count per client of something it holds (open connections, WebSocket sockets, calls in flight), capped at
 * `perClient` (0: no cap, nothing counted). `take` refuses past the cap; every granted take is given back with
 * `release` when the thing ends, so a client's count is what it holds now and the map only names clients that
 * hold something.
 */
export class ClientQuota {
  private readonly held = new Map<string, number>();

  constructor(readonly perClient: number) {}

  take(client: string, n = 1): boolean {
    if (this.perClient === 0) return true;
    const now = this.held.get(client) ?? 0;
    if (now + n > this.perClient) return false;
    this.held.set(client, now + n);
    return true;
  }

  release(client: string, n = 1): void {
    if (this.perClient === 0) return;
    const left = (this.held.get(client) ?? 0) - n;
    if (left > 0) this.held.set(client, left);
    else this.held.delete(client);
  }

  /** Replaces every count with the ones given: for a stack that can recount what each client holds (uws/connections.ts in src/rpc/transport). */
  reset(counts: ReadonlyMap<string, number>): void {
    if (this.perClient === 0) return;
    this.held.clear();
    for (const [client, n] of counts) if (n > 0) this.held.set(client, n);
  }
}
