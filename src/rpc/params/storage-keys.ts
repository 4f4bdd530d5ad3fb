/**
 * An eth_getProof storage key as a 32-byte word: the spec (like the execution-apis and geth) takes keys of
 * up to 32 bytes and reads a shorter one as a left-padded number, but some nodes (anvil) insist on exactly
 * 32 bytes, so the key is padded before it is forwarded. The schema has already bounded it to 64 digits.
 */
export function toStorageWord(key: string): string {
  return `0x${key.slice(2).toLowerCase().padStart(64, '0')}`;
}

/**
 * A storage key as geth writes it back in the proof (internal/ethapi GetProof): a key of 32 bytes (63 or 64
 * digits) as the 32-byte word, lower case; a shorter one as a QUANTITY (`0x0` stays `0x0`, `0x00ab` is
 * `0xab`). The execution-apis type the answer's key as lower-case hex of at most 32 bytes, which both are.
 */
function proofKeyAsGethWrites(key: string): string {
  const digits = key.slice(2);
  if (Math.ceil(digits.length / 2) === 32) return toStorageWord(key);
  return `0x${BigInt(`0x${digits || '0'}`).toString(16)}`;
}

/** Whether the node's answer already carries every key as geth writes it (each a lower-case 32-byte word). */
export const keysAsForwarded = (keys: readonly string[]): boolean => keys.every((k) => k === toStorageWord(k));

interface ProofWithKeys {
  storageProof?: { key?: unknown }[];
}

/**
 * The node's proof with each storage proof's key as geth writes the key the client sent (anvil echoes the
 * padded 32-byte word it was forwarded, so `0x0` came back as 64 digits). The node answers one storage
 * proof per key, in the order sent; an answer of another length is left as the node wrote it.
 */
export function echoSentKeys<T extends ProofWithKeys>(proof: T, sent: readonly string[]): T {
  const proofs = proof.storageProof;
  if (!Array.isArray(proofs) || proofs.length !== sent.length) return proof;
  return { ...proof, storageProof: proofs.map((p, i) => ({ ...p, key: proofKeyAsGethWrites(sent[i]!) })) };
}
