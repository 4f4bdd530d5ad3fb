import { RpcError } from '../../common/errors.js';
import { RpcCodes } from '../errors.js';
import type { SocketSession } from '../transport/session.js';
import type { WsLimits } from './config.js';

/** RPC_WS_MAX_SUBSCRIPTIONS and the address caps, as ledger.ts applies them. */
type SubscriptionCaps = Pick<WsLimits, 'maxSubscriptions' | 'maxAddressesPerSocket' | 'maxAddressesPerClient'>;

/** A place under the caps, held from before a subscription starts until it ends; release is idempotent. */
export interface Slot {
  readonly released: boolean;
  release(): void;
}

interface Tally {
  subscriptions: number;
  addresses: number;
}

/**
 * What each socket and each client (the rate limit's identity) holds in this replica: subscriptions and
 * the addresses of their logs filters. The hub reads every block's logs for the union of all filters, so
 * the union is what one client must not be able to grow without bound; counting happens before a
 * subscription starts, so concurrent subscribes (resumes that take a while) cannot overshoot a cap.
 */
export class ClientLedger {
  private readonly sockets = new WeakMap<SocketSession, Tally>();
  private readonly clients = new Map<string, Tally>();
  private readonly resumes = new Map<string, Promise<unknown>>();

  constructor(private readonly caps: SubscriptionCaps) {}

  reserve(session: SocketSession, addresses: number): Slot {
    const socket = this.sockets.get(session) ?? { subscriptions: 0, addresses: 0 };
    const client = this.clients.get(session.client) ?? { subscriptions: 0, addresses: 0 };
    const { maxSubscriptions, maxAddressesPerSocket, maxAddressesPerClient } = this.caps;
    const over = (message: string, limit: number) => new RpcError(RpcCodes.LimitExceeded, message, { limit });
    if (socket.subscriptions >= maxSubscriptions)
      throw over(
        `too many subscriptions on this socket: at most ${maxSubscriptions} (RPC_WS_MAX_SUBSCRIPTIONS)`,
        maxSubscriptions,
      );
    if (socket.addresses + addresses > maxAddressesPerSocket)
      throw over(
        `too many log addresses on this socket: its subscriptions would follow ${socket.addresses + addresses} addresses, at most ${maxAddressesPerSocket} (RPC_WS_MAX_SUBSCRIPTION_ADDRESSES_PER_SOCKET)`,
        maxAddressesPerSocket,
      );
    if (client.addresses + addresses > maxAddressesPerClient)
      throw over(
        `too many log addresses for this client: its subscriptions on all its sockets would follow ${client.addresses + addresses} addresses, at most ${maxAddressesPerClient} (RPC_WS_MAX_SUBSCRIPTION_ADDRESSES_PER_CLIENT)`,
        maxAddressesPerClient,
      );
    socket.subscriptions++;
    socket.addresses += addresses;
    client.subscriptions++;
    client.addresses += addresses;
    this.sockets.set(session, socket);
    this.clients.set(session.client, client);
    let released = false;
    return {
      get released() {
        return released;
      },
      release: () => {
        if (released) return;
        released = true;
        socket.subscriptions--;
        socket.addresses -= addresses;
        client.subscriptions--;
        client.addresses -= addresses;
        // Only clients holding something are kept: the map stays as small as the live subscriptions.
        if (client.subscriptions === 0 && this.clients.get(session.client) === client)
          this.clients.delete(session.client);
      },
    };
  }

  /** Runs a client's resumes one after another (their replays are what may be large). */
  oneAtATime<T>(client: string, run: () => Promise<T>): Promise<T> {
    const before = this.resumes.get(client) ?? Promise.resolve();
    const mine = before.then(run, run);
    const tail = mine.catch(() => undefined);
    this.resumes.set(client, tail);
    void tail.then(() => {
      if (this.resumes.get(client) === tail) this.resumes.delete(client);
    });
    return mine;
  }
}
