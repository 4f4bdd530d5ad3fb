import { concat, type Bytes } from './bytes.js';
import type { HashProvider } from './hash.js';
import { KOALABEAR_P, poseidon2 } from './poseidon2.js';

/**
 * Linea's state-tree encodings over Poseidon2 (STATE_HASH=poseidon2), as `SparseMerkleProof.sol` and the
 * prover's state manager define them. A KoalaBear element holds 31 bits, so a 32-byte word that may exceed
 * the field ("spread") is written as 16 limbs of 2 bytes, each left-padded to 4: 0xAAAABBBB… becomes
 * 0x0000AAAA0000BBBB… (64 bytes). Hashes are 8 limbs, each already below p, so they are written as they are.
 *
 *   leaf opening (192 B) = spread(prev) ‖ spread(next) ‖ hKey ‖ hValue            leaf hash = H(opening)
 *   root node (96 B)     = spread(nextFreeNode) ‖ subRoot                        root = H(root node)
 *   empty sibling leaf   = 32 zero bytes in a proof, hash 0x00…00
 *   account hKey         = H(s[0..32] ‖ 0^24 ‖ s[32..40]), s = spread of the 20-byte address (40 bytes; the
 *                          partial last block left-padded, as gnark-crypto's Merkle–Damgård hasher does)
 *   storage hKey         = H(spread(slot))                 storage hValue = H(spread(value))
 *   account hValue       = H(spread(nonce) ‖ spread(balance) ‖ storageRoot ‖ codeHash ‖ spread(keccakCodeHash) ‖
 *   spread(codeSize)) code hash            = H(spread of the code in 16-byte blocks, the last right-padded with zeros;
 *                          no code = one zero block)
 *   tail sentinel hKey   = 8 limbs of p − 1 (0x7f000000 each)
 */

/** Each 2 bytes of `b` (even length) as 4: two zero bytes, then the pair. */
export function spread(b: Bytes): Bytes {
  const out = new Uint8Array(b.length * 2);
  for (let i = 0; i < b.length; i += 2) {
    out[2 * i + 2] = b[i]!;
    out[2 * i + 3] = b[i + 1]!;
  }
  return out;
}

/** The inverse of `spread`; throws when a padding byte is not zero (a non-canonical encoding). */
export function unspread(b: Bytes, what: string): Bytes {
  const out = new Uint8Array(b.length / 2);
  for (let i = 0; i < b.length; i += 4) {
    if (b[i] !== 0 || b[i + 1] !== 0) throw new Error(`${what} is not a spread word (byte ${i} must be 0)`);
    out[i / 2] = b[i + 2]!;
    out[i / 2 + 1] = b[i + 3]!;
  }
  return out;
}

function leafWire(o: Bytes): Bytes {
  if (o.length !== 128) throw new Error(`a stored leaf opening is 128 bytes, got ${o.length}`);
  return concat(spread(o.subarray(0, 32)), spread(o.subarray(32, 64)), o.subarray(64, 128));
}

function leafFromWire(w: Bytes): Bytes {
  if (w.length !== 192) throw new Error(`a leaf opening is 192 bytes, got ${w.length}`);
  return concat(unspread(w.subarray(0, 64), 'prev'), unspread(w.subarray(64, 128), 'next'), w.subarray(128, 192));
}

function rootWire(r: Bytes): Bytes {
  if (r.length !== 64) throw new Error(`a stored root node is 64 bytes, got ${r.length}`);
  return concat(spread(r.subarray(0, 32)), r.subarray(32, 64));
}

function rootFromWire(w: Bytes): Bytes {
  if (w.length !== 96) throw new Error(`the root node is 96 bytes, got ${w.length}`);
  return concat(unspread(w.subarray(0, 64), 'nextFreeNode'), w.subarray(64, 96));
}

function accountKey(address: Bytes): Bytes {
  if (address.length !== 20) throw new Error(`an address is 20 bytes, got ${address.length}`);
  const s = spread(address);
  const input = new Uint8Array(64);
  input.set(s.subarray(0, 32), 0);
  input.set(s.subarray(32, 40), 56);
  return poseidon2(input);
}

function accountValue(v: Bytes): Bytes {
  if (v.length !== 192) throw new Error(`an account value is 192 bytes, got ${v.length}`);
  return poseidon2(
    concat(
      spread(v.subarray(0, 32)),
      spread(v.subarray(32, 64)),
      v.subarray(64, 128),
      spread(v.subarray(128, 160)),
      spread(v.subarray(160, 192)),
    ),
  );
}

function codeHash(code: Bytes): Bytes {
  const blocks = Math.max(1, Math.ceil(code.length / 16));
  const padded = new Uint8Array(blocks * 16);
  padded.set(code);
  return poseidon2(spread(padded));
}

const MAX_HKEY = new Uint8Array(32);
for (let i = 0; i < 32; i += 4) new DataView(MAX_HKEY.buffer).setUint32(i, KOALABEAR_P - 1);

export const poseidon2HashProvider: HashProvider = {
  name: 'poseidon2',
  hash: poseidon2,
  leafWire,
  leafFromWire,
  rootWire,
  rootFromWire,
  leafWireLength: 192,
  rootWireLength: 96,
  emptyLeafWire: new Uint8Array(32),
  maxHKey: MAX_HKEY,
  accountKey,
  storageKey: (slot) => poseidon2(spread(slot)),
  accountValue,
  storageValue: (value) => poseidon2(spread(value)),
  code: codeHash,
};
