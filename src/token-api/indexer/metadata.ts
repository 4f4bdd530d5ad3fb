import { AbiCoder, isError, toUtf8String, type JsonRpcProvider } from 'ethers';
import { erc20Abi } from './abi.js';

export interface TokenMetadata {
  name: string;
  symbol: string;
  decimals: number;
  totalSupply: bigint;
  /** False when name, symbol or decimals could not be read (reverted, missing, undecodable). */
  complete: boolean;
  /** False when the address has no contract code at all. */
  isContract: boolean;
}

/** Control characters and the like have no place in a name; long values are cut. */
export function sanitizeText(s: string, max = 128): string {
  // eslint-disable-next-line no-control-regex -- stripping control characters is the point
  const clean = s.replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff]/g, '').trim();
  return clean.length > max ? clean.slice(0, max) : clean;
}

/** ABI `string`, or a right-padded `bytes32` (early tokens such as MKR), or undefined. */
export function decodeText(data: string): string | undefined {
  const bytes = (data.length - 2) / 2;
  if (bytes >= 64) {
    try {
      return sanitizeText(AbiCoder.defaultAbiCoder().decode(['string'], data)[0] as string);
    } catch {
      // fall through: maybe bytes32 followed by garbage
    }
  }
  if (bytes >= 32) {
    const word = data.slice(2, 66).replace(/(00)+$/, '');
    try {
      return sanitizeText(toUtf8String(`0x${word}`));
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** eth_call that treats a revert as "no answer" and lets transport errors through (they are retried). */
async function call(
  provider: JsonRpcProvider,
  to: string,
  data: string,
  blockTag?: number,
): Promise<string | undefined> {
  try {
    const out = await provider.call({ to, data, blockTag });
    return out === '0x' ? undefined : out;
  } catch (err) {
    if (isError(err, 'CALL_EXCEPTION')) return undefined;
    throw err;
  }
}

export async function readTotalSupply(provider: JsonRpcProvider, token: string): Promise<bigint | undefined> {
  const out = await call(provider, token, erc20Abi.encodeFunctionData('totalSupply'));
  if (out === undefined || out.length < 66) return undefined;
  return BigInt(out.slice(0, 66));
}

/**
 * Reads ERC-20 metadata by eth_call, tolerating what real chains contain: bytes32 names, reverting or
 * missing name/symbol/decimals, absurd decimals. Missing parts get neutral fallbacks and
 * `complete: false` (the spam heuristic counts that against the token).
 */
export async function readTokenMetadata(provider: JsonRpcProvider, token: string): Promise<TokenMetadata> {
  const [code, nameHex, symbolHex, decimalsHex, totalSupply] = await Promise.all([
    provider.getCode(token),
    call(provider, token, erc20Abi.encodeFunctionData('name')),
    call(provider, token, erc20Abi.encodeFunctionData('symbol')),
    call(provider, token, erc20Abi.encodeFunctionData('decimals')),
    readTotalSupply(provider, token),
  ]);
  const symbolText = symbolHex ? decodeText(symbolHex) : undefined;
  const nameText = nameHex ? decodeText(nameHex) : undefined;
  let decimals: number | undefined;
  if (decimalsHex && decimalsHex.length >= 66) {
    const d = BigInt(decimalsHex.slice(0, 66));
    if (d <= 77n) decimals = Number(d); // 10^77 < 2^256: anything larger cannot describe a uint256 amount
  }
  const symbol = symbolText || 'UNKNOWN';
  const name = nameText || symbolText || 'Unknown token';
  return {
    name,
    symbol,
    decimals: decimals ?? 18,
    totalSupply: totalSupply ?? 0n,
    complete: Boolean(nameText && symbolText && decimals !== undefined),
    isContract: code !== '0x',
  };
}
