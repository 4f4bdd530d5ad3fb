import { createHash, randomBytes } from 'node:crypto';

/**
 * API keys as the client holds them: "l2s_" + 43 base64url characters (32 random bytes). Only their
 * SHA-256 is stored, so a database dump does not hand out access; a fast hash is right here because the
 * secret is random and long (nothing to brute-force), and every request pays for the lookup.
 */
const KEY_PREFIX = 'l2s_';
const KEY_SHAPE = /^l2s_[A-Za-z0-9_-]{43}$/;

export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

export function isApiKeyShaped(s: string): boolean {
  return KEY_SHAPE.test(s);
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** What `keys list` shows so an operator can tell keys apart without the secret: "l2s_AbCd…". */
export function displayPrefix(key: string): string {
  return `${key.slice(0, KEY_PREFIX.length + 4)}…`;
}
