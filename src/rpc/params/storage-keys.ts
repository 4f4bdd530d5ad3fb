/**
 * An eth_getProof storage key as a 32-byte word: the spec (like the execution-apis and geth) takes keys of
 * up to 32 bytes and reads a shorter one as a left-padded number, but some nodes (anvil) insist on exactly
 * 32 bytes, so the key is padded before it is forwarded. The schema has already bounded it to 64 digits.
 */
export function toStorageWord(key: string): string {
  return `0x${key.slice(2).toLowerCase().padStart(64, '0')}`;
}
