import { equal, isZero, toHex, type Bytes } from './bytes.js';
import {
  accountHKey,
  decodeAccountValue,
  encodeAccountValue,
  storageHKey,
  storageKeyWord,
  treeConstants,
  type AccountValue,
  type TreeConstants,
} from './encoding.js';
import { keccakHashProvider, type HashProvider } from './hash.js';
import { keccak256 } from '../common/eth/keccak.js';
import { ACCOUNT_TREE, type BlockRecord, type TreeWrites, type VersionedStore } from './store.js';
import { applyChanges, type KeyChange } from './tree.js';
import { proveKeysAt, readValues, type KeyProof, type LeafProof } from './tree-read.js';
import type { MerkleProofJson, ProofEntryJson, Raw, StateProofResultJson } from './verify.js';

/** Some of an account's fields (a diff's, or the chain's as read); absent ones are left as they are. */
export type AccountFields = { nonce?: bigint; balance?: bigint; code?: Bytes };

/** What one block did to one account (the net effect of all its transactions). */
export interface AccountChange extends AccountFields {
  /** Lowercase 0x address. */
  address: string;
  /** The account no longer exists after the block (its storage goes with it). */
  deleted: boolean;
  /** The storage was wiped before `storage` applies (the account was deleted and created again in the block). */
  clearStorage?: boolean;
  /** Slot (0x + 64 hex) → 32-byte word; a zero word deletes the slot. */
  storage: Map<string, Bytes>;
  /**
   * The account as the chain had it before the block, when the diff says so: used for accounts this
   * tree has never seen (genesis allocations touched for the first time).
   */
  before?: { nonce: bigint; balance: bigint; code: Bytes };
  /** Fields of `before` the diff did not carry, read from the chain only when this tree has never seen the account. */
  loadBefore?: () => Promise<AccountFields>;
}

/** svc_getProof result shapes (specs/rpc.openrpc.json: StateProof, ProofEntry, MerkleProof): the verifier's own. */
export type { ProofEntryJson, StateProofResultJson as StateProofJson } from './verify.js';

const merkle = (p: LeafProof): Raw<MerkleProofJson> => ({ proofRelatedNodes: p.proofRelatedNodes, value: p.value });

/** A proof entry in bytes (`proofJson` encodes it as the spec's JSON). */
export function proofEntry(key: string, p: KeyProof): Raw<ProofEntryJson> {
  return p.kind === 'inclusion'
    ? { key, leafIndex: p.leaf.leafIndex, proof: merkle(p.leaf) }
    : {
        key,
        leftLeafIndex: p.left.leafIndex,
        leftProof: merkle(p.left),
        rightLeafIndex: p.right.leafIndex,
        rightProof: merkle(p.right),
      };
}

const hexed = (v: unknown): unknown =>
  v instanceof Uint8Array
    ? toHex(v)
    : Array.isArray(v)
      ? v.map(hexed)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, hexed(x)]))
        : v;

/** A proof (or a part of one) built in bytes as the spec's JSON: every byte string as 0x hex. */
export const proofJson = <T>(raw: Raw<T>): T => hexed(raw) as T;

export const proofEntryJson = (key: string, p: KeyProof): ProofEntryJson =>
  proofJson<ProofEntryJson>(proofEntry(key, p));

/**
 * The L2 world state as sparse Merkle trees: one account tree (key: address) and one storage tree per
 * account (key: slot) whose root is part of the account value. Blocks are applied in order; proofs can
 * be read at any block the store still retains.
 */
export class WorldState {
  readonly c: TreeConstants;

  constructor(
    readonly store: VersionedStore,
    hasher: HashProvider = keccakHashProvider,
  ) {
    this.c = treeConstants(hasher);
  }

  emptyAccount(): AccountValue {
    const k = keccak256(new Uint8Array(0));
    return {
      nonce: 0n,
      balance: 0n,
      storageRoot: this.c.emptyRoot,
      codeHash: this.c.emptyCodeHash,
      keccakCodeHash: k,
      codeSize: 0n,
    };
  }

  private hKeyOf(address: string): string {
    return toHex(accountHKey(this.c.hasher, address));
  }

  /** Applies one block's state diff on top of the head and commits it; returns the new account-tree root. */
  async applyBlock(header: Omit<BlockRecord, 'root'>, changes: readonly AccountChange[]): Promise<string> {
    const head = await this.store.head();
    const at = head?.number ?? -1n;
    if (header.number <= at) throw new Error(`block ${header.number} is not above the head ${at}`);
    const { root, writes } = await this.store.read(at < 0n ? 0n : at, async (reader) => {
      const h = this.c.hasher;
      const sorted = [...changes].sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
      const hKeys = sorted.map((a) => this.hKeyOf(a.address));
      const current = at < 0n ? new Map<string, Bytes>() : await readValues(this.c, reader, ACCOUNT_TREE, hKeys);
      const writes = new Map<string, TreeWrites>();
      const accountChanges: KeyChange[] = [];
      for (const [n, ch] of sorted.entries()) {
        const hKey = hKeys[n]!;
        const raw = current.get(hKey);
        const tree = ch.address.toLowerCase();
        if (ch.deleted) {
          if (!raw) continue;
          accountChanges.push({ hKey, value: null });
          const cleared = await applyChanges(this.c, reader, tree, [], { reset: true });
          if (cleared.writes.nodes.size > 0) writes.set(tree, cleared.writes);
          continue;
        }
        const acct: AccountValue = raw ? decodeAccountValue(raw) : this.emptyAccount();
        if (!raw && ch.before) this.setFields(acct, ch.before);
        if (!raw && ch.loadBefore) this.setFields(acct, await ch.loadBefore());
        this.setFields(acct, ch);
        if (ch.storage.size > 0 || ch.clearStorage) {
          const slots: KeyChange[] = [...ch.storage].map(([slot, value]) => {
            const k = toHex(storageHKey(h, storageKeyWord(slot)));
            return isZero(value) ? { hKey: k, value: null } : { hKey: k, value, hValue: h.storageValue(value) };
          });
          const st = await applyChanges(this.c, reader, tree, slots, { reset: ch.clearStorage ?? false });
          if (st.writes.nodes.size > 0 || st.writes.keys.size > 0) writes.set(tree, st.writes);
          acct.storageRoot = st.root;
        }
        const value = encodeAccountValue(acct);
        if (raw && equal(raw, value)) continue;
        accountChanges.push({ hKey, value, hValue: h.accountValue(value) });
      }
      const acc = await applyChanges(this.c, reader, ACCOUNT_TREE, accountChanges);
      writes.set(ACCOUNT_TREE, acc.writes);
      return { root: toHex(acc.root), writes };
    });
    await this.store.commit({ ...header, root }, writes);
    return root;
  }

  private setFields(acct: AccountValue, f: AccountFields): void {
    if (f.nonce !== undefined) acct.nonce = f.nonce;
    if (f.balance !== undefined) acct.balance = f.balance;
    if (f.code !== undefined) {
      acct.codeHash = this.c.hasher.code(f.code);
      acct.keccakCodeHash = keccak256(f.code);
      acct.codeSize = BigInt(f.code.length);
    }
  }

  /** svc_getProof's result at a block, as JSON. */
  async getProof(address: string, storageKeys: readonly string[], block: bigint): Promise<StateProofResultJson> {
    return proofJson<StateProofResultJson>(await this.proofAt(address, storageKeys, block));
  }

  /**
   * svc_getProof's result at a block (which the caller has checked is finalized, ingested and retained) in bytes: one
   * read for all keys.
   */
  async proofAt(address: string, storageKeys: readonly string[], block: bigint): Promise<Raw<StateProofResultJson>> {
    const addr = address.toLowerCase();
    const slots = storageKeys.map((key) => storageKeyWord(key));
    const [account, ...storage] = await proveKeysAt(
      this.c,
      this.store,
      block,
      [
        { tree: ACCOUNT_TREE, hKey: this.hKeyOf(addr) },
        ...slots.map((slot) => ({ tree: addr, hKey: toHex(storageHKey(this.c.hasher, slot)) })),
      ],
      // The proof backend serves only blocks finalized on L1 and ingested: rollback never reaches them.
      { settled: true },
    );
    return {
      accountProof: proofEntry(addr, account!),
      storageProofs: storage.map((p, i) => proofEntry(toHex(slots[i]!), p)),
    };
  }

  /** The account-tree root after a block, when the store still has that block. */
  async rootAt(block: bigint): Promise<string | undefined> {
    return (await this.store.block(block))?.root;
  }
}
