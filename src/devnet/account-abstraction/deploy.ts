import { AbiCoder, ZeroHash, concat, getCreate2Address, keccak256, type Signer } from 'ethers';
import { BaseError } from '../../common/errors.js';
import {
  EntryPoint__factory,
  SimpleAccountFactory__factory,
} from '../../../generated/contracts/account-abstraction/types/index.js';
import { mined } from '../../common/chain/mined.js';

/**
 * The deterministic deployment proxy (github.com/Arachnid/deterministic-deployment-proxy) that anvil
 * predeploys at this address, the same one public chains use: CREATE2 through it gives an address that
 * depends only on the bytecode and the salt, never on who sends or on any account's nonce.
 */
export const CREATE2_DEPLOYER = '0x4e59b44847b379578588920ca78fbf26c0b4956c';

export interface AccountAbstractionDeployment {
  /** EntryPoint v0.7, compiled from @account-abstraction/contracts 0.7.0 (generated/contracts/account-abstraction). */
  entryPoint: string;
  /** SimpleAccountFactory of that package, bound to the EntryPoint: `createAccount(owner, salt)`. */
  accountFactory: string;
}

export class DeterministicDeployError extends BaseError {
  override name = 'DeterministicDeployError';
}

/** The address `bytecode` (constructor arguments included) gets from the CREATE2 deployer with salt 0. */
export function create2Address(bytecode: string): string {
  return getCreate2Address(CREATE2_DEPLOYER, ZeroHash, keccak256(bytecode));
}

/**
 * Deploys `bytecode` through the CREATE2 deployer, or does nothing when it is already there (the same
 * bytecode at the same address is the same contract). Checks the code landed: the proxy does not revert
 * when the creation fails, it just returns nothing.
 */
export async function deployDeterministic(signer: Signer, bytecode: string, what: string): Promise<string> {
  const provider = signer.provider;
  if (!provider) throw new DeterministicDeployError(`${what}: the signer has no provider`);
  const address = create2Address(bytecode);
  if ((await provider.getCode(address)) !== '0x') return address;
  if ((await provider.getCode(CREATE2_DEPLOYER)) === '0x') {
    throw new DeterministicDeployError(
      `${what}: no CREATE2 deployer at ${CREATE2_DEPLOYER} on this chain (anvil predeploys it unless --disable-default-create2-deployer)`,
    );
  }
  const receipt = await mined(signer.sendTransaction({ to: CREATE2_DEPLOYER, data: concat([ZeroHash, bytecode]) }));
  if (receipt?.status !== 1 || (await provider.getCode(address)) === '0x') {
    throw new DeterministicDeployError(
      `${what}: CREATE2 deployment to ${address} failed (transaction ${receipt?.hash ?? 'not mined'})`,
    );
  }
  return address;
}

/**
 * ERC-4337 v0.7 on L2: the EntryPoint and a SimpleAccountFactory bound to it, both through CREATE2 with
 * salt 0, so their addresses are fixed by the compiled bytecode: the same on every run and machine, and
 * the same whoever sends the transactions (the caller passes an account of its own, so no other
 * account's nonce, and no address deployed by one, moves).
 */
export async function deployAccountAbstraction(signer: Signer): Promise<AccountAbstractionDeployment> {
  const entryPoint = await deployDeterministic(signer, EntryPoint__factory.bytecode, 'EntryPoint v0.7');
  const factoryCode = concat([
    SimpleAccountFactory__factory.bytecode,
    AbiCoder.defaultAbiCoder().encode(['address'], [entryPoint]),
  ]);
  const accountFactory = await deployDeterministic(signer, factoryCode, 'SimpleAccountFactory');
  return { entryPoint, accountFactory };
}
