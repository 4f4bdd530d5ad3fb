import type { Logger } from '../../common/log.js';
import type { Check } from '../../common/http/operator.js';
import type { Chain } from '../chain.js';
import type { Direction } from '../config.js';
import type { RelayerMetrics } from '../metrics.js';

export interface FundsPause {
  detail: string;
  /** Wei the signer needs before claiming may resume (the next claim's cost, or the threshold). */
  needed: bigint;
  /**
   * Gas limit of the claim that could not be paid: re-priced at current fees while paused, so no gas estimate is needed
   * to know when to resume.
   */
  gasLimit: bigint | undefined;
}

/**
 * Whether the signer that claims one direction can pay for its next claim. A claim the node refuses for
 * lack of funds never reaches the chain, so sending it only burns retries and floods the log: claiming of
 * the direction pauses instead, logged once when it starts and once when it ends, visible in readiness
 * (`l1SignerBalance` / `l2SignerBalance`) and in `relayer_signer_balance_wei`, and resumes by itself once
 * the balance covers the claim again.
 */
export class SignerFunds {
  private pause: FundsPause | undefined;
  private balance: bigint | undefined;

  /** `o`: the direction's context (the signer pays on its destination); `address`: the signer's. */
  constructor(
    private readonly o: {
      direction: Direction;
      destination: Chain;
      destinationConfig: { signerMinBalanceWei: bigint };
      logger: Logger;
      metrics: RelayerMetrics;
    },
    private readonly address: string,
  ) {}

  get paused(): FundsPause | undefined {
    return this.pause;
  }

  /** One eth_getBalance per claiming iteration (never per message); the gauge follows it. */
  async read(): Promise<bigint> {
    const balance = await this.o.destination.provider.getBalance(this.address, 'latest');
    this.balance = balance;
    // A float gauge: exact to 2^53 wei, plenty for an alert on a draining account.
    this.o.metrics.signerBalance.set(
      { direction: this.o.direction, chain: this.o.destination.name, signer: this.address },
      Number(balance),
    );
    return balance;
  }

  /** Below the operator's threshold (`*_SIGNER_MIN_BALANCE_WEI`): pauses and returns true. */
  belowThreshold(balance: bigint): boolean {
    const min = this.o.destinationConfig.signerMinBalanceWei;
    if (balance >= min) return false;
    const v = `${this.o.destination.name}_SIGNER_MIN_BALANCE_WEI`;
    this.enter({
      detail: `signer ${this.address} balance ${balance} wei is below ${v} (${min} wei); claiming paused until it is funded`,
      needed: min,
      gasLimit: undefined,
    });
    return true;
  }

  /** The next claim costs more than the signer has (or the node refused a claim for lack of funds). */
  cannotPay(balance: bigint, gasLimit: bigint, maxFeePerGas: bigint, how = ''): void {
    const needed = gasLimit * maxFeePerGas;
    this.enter({
      detail: `signer ${this.address} balance ${balance} wei cannot pay the next claim (needs ${needed} wei: gas limit ${gasLimit} x max fee per gas ${maxFeePerGas})${how}`,
      needed,
      gasLimit,
    });
  }

  /** Claiming may go on: logs the end of a pause. */
  resume(): void {
    this.o.metrics.fundsPaused.set(this.labels, 0);
    if (!this.pause) return;
    const was = this.pause;
    this.pause = undefined;
    this.o.logger.info(
      { ...this.labels, balance: String(this.balance), needed: String(was.needed) },
      `claiming resumed: signer ${this.address} holds ${this.balance} wei, enough for the next claim`,
    );
  }

  private enter(p: FundsPause): void {
    this.o.metrics.fundsPaused.set(this.labels, 1);
    const first = this.pause === undefined;
    this.pause = p;
    if (first)
      this.o.logger.error(
        { ...this.labels, balance: String(this.balance), needed: String(p.needed) },
        `claiming paused: ${p.detail}`,
      );
  }

  private get labels() {
    return { direction: this.o.direction, signer: this.address };
  }

  /** The readiness check, named by the chain the signer pays on. */
  check(): Check {
    const name = `${this.o.destination.name.toLowerCase()}SignerBalance`;
    return this.pause ? { name, ok: false, detail: this.pause.detail } : { name, ok: true };
  }
}
