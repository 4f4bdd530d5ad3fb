import { HDNodeWallet, Mnemonic } from 'ethers';

/** anvil's well-known development mnemonic: these keys are public and must never hold real funds. */
export const DEV_MNEMONIC = 'test test test test test test test test test test test junk';

export const ACCOUNT_COUNT = 22;

/**
 * Fixed roles keep the devnet's own senders (coordinator, scenario, traffic, bundler) apart from the relayer
 * and from tests, so no two writers ever race for one nonce. Indices 10..19 are free for tests; the
 * bundler's two keys come after them so the test accounts kept their indices.
 */
export const ROLES = {
  deployer: 0,
  coordinator: 1,
  relayer: 2,
  trader: 3,
  user: 4,
  user2: 5,
  treasury: 6,
  vesting: 7,
  ecosystem: 8,
  traffic: 9,
  /** Sends the bundler's handleOps bundles. */
  bundlerExecutor: 20,
  /** The bundler's utility key; it also deploys the account-abstraction contracts (CREATE2). */
  bundlerUtility: 21,
} as const;

export type Role = keyof typeof ROLES;

export interface DevAccount {
  address: string;
  privateKey: string;
  role: Role | 'test';
}

export function devAccounts(count = ACCOUNT_COUNT): DevAccount[] {
  const mnemonic = Mnemonic.fromPhrase(DEV_MNEMONIC);
  const byIndex = new Map<number, Role>(Object.entries(ROLES).map(([role, index]) => [index, role as Role]));
  return Array.from({ length: count }, (_, i) => {
    const wallet = HDNodeWallet.fromMnemonic(mnemonic, `m/44'/60'/0'/0/${i}`);
    return { address: wallet.address, privateKey: wallet.privateKey, role: byIndex.get(i) ?? 'test' };
  });
}
