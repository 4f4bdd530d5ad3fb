import { FunctionFragment } from 'ethers';
import { env } from '../common/config/env.js';
import { compileCalldataFilter } from './calldata-filter.js';
import { SIGNER_TYPES, parseExtraKeys, signerConfigFrom, type SignerConfig } from './signer-config.js';

/** The variables of each chain (`L1_*`, `L2_*`): its node and contract, its listener, its filters, its signer. */

const DEFAULT_CONFIRMATIONS = 4;

export function chainEnv<P extends 'L1' | 'L2'>(p: P) {
  return {
    [`${p}_CONTRACT_ADDRESS`]: env.address({ required: true }).describe("The chain's message service."),
    [`${p}_RPC_URL`]: env.url({ required: true }).describe("The chain's JSON-RPC node."),
    [`${p}_EVENT_FILTER_CALLDATA`]: env
      .string()
      .describe('Filtrex expression over calldata.* a message must pass (else EXCLUDED); needs the interface below.'),
    [`${p}_EVENT_FILTER_CALLDATA_FUNCTION_INTERFACE`]: env
      .string()
      .describe('Signature decoding the calldata, arguments named, e.g. record(uint256 amount, bytes note).'),
    [`${p}_EVENT_FILTER_FROM_ADDRESS`]: env.address().describe('Only messages from this sender (else EXCLUDED).'),
    [`${p}_EVENT_FILTER_TO_ADDRESS`]: env.address().describe('Only messages to this recipient (else EXCLUDED).'),
    [`${p}_LISTENER_BLOCK_CONFIRMATION`]: env
      .integer({ default: DEFAULT_CONFIRMATIONS })
      .describe(
        'Confirmations before an event is processed (negative = the default): the deepest reorg the chain can have.',
      ),
    [`${p}_LISTENER_INITIAL_FROM_BLOCK`]: env
      .integer({ default: -1 })
      .describe('First block listened to: -1 = resume from the database, else the head; n = block n.'),
    [`${p}_LISTENER_INTERVAL`]: env
      .integer({ min: 1, default: 4_000 })
      .describe('Polling interval (ms), also pacing the loops of the direction claimed on this chain.'),
    [`${p}_LISTENER_RECEIPT_POLLING_INTERVAL`]: env
      .integer({ min: 1, default: 4_000 })
      .describe('Receipt polling interval (ms).'),
    [`${p}_MAX_BLOCKS_TO_FETCH_LOGS`]: env
      .integer({ min: 1, default: 1_000 })
      .describe('Largest eth_getLogs window (blocks).'),
    [`${p}_CLAIM_VIA_ADDRESS`]: env
      .address()
      .describe('Contract claims are sent through, same calldata (it must forward calldata, value and revert data).'),
    [`${p}_MAX_GAS_FEE_ENFORCED`]: env
      .boolean({ default: false })
      .describe('A claim whose uncapped fee exceeds MAX_FEE_PER_GAS_CAP is not sent (FEE_UNDERPRICED).'),
    [`${p}_SIGNER_MIN_BALANCE_WEI`]: env
      .bigint({ min: 0n, default: 0n })
      .describe(
        'Ours: claiming on this chain pauses while the signer holds less (0 = only when the next claim cannot pay).',
      ),
    [`${p}_SIGNER_TYPE`]: env
      .oneOf(SIGNER_TYPES, { required: true })
      .describe('private-key, remote-signer (Web3Signer) or kms (AWS KMS secp256k1 key).'),
    [`${p}_SIGNER_PRIVATE_KEY`]: env.hex32({ sensitivity: 'secret' }).describe('Signing key (private-key).'),
    [`${p}_SIGNER_PRIVATE_KEYS`]: env
      .string({ sensitivity: 'secret' })
      .describe(
        'Ours: extra keys claiming beside it, comma-separated, at most 16, each with its own nonces (private-key).',
      ),
    [`${p}_KMS_KEY_ID`]: env.string().describe('KMS key id (kms; standard AWS_* credentials apply).'),
    [`${p}_KMS_REGION`]: env.string().describe("KMS region (kms); unset = the SDK's default."),
    [`${p}_REMOTE_SIGNER_ENDPOINT`]: env.url().describe('Web3Signer endpoint (remote-signer).'),
    [`${p}_REMOTE_SIGNER_PUBLIC_KEY`]: env.hex().describe('Public key of the signing key (remote-signer).'),
    [`${p}_REMOTE_SIGNER_TLS_KEYSTORE_PATH`]: env
      .string()
      .describe('Client keystore (PKCS#12) for mutual TLS; set, the other three TLS variables are required.'),
    [`${p}_REMOTE_SIGNER_TLS_KEYSTORE_PASSWORD`]: env
      .string({ sensitivity: 'secret' })
      .describe('Password of the keystore.'),
    [`${p}_REMOTE_SIGNER_TLS_TRUSTSTORE_PATH`]: env
      .string()
      .describe('Truststore (PKCS#12) the signer certificate is checked against.'),
    [`${p}_REMOTE_SIGNER_TLS_TRUSTSTORE_PASSWORD`]: env
      .string({ sensitivity: 'secret' })
      .describe('Password of the truststore.'),
  } as const;
}

/** The checks of one chain's variables that need more than one of them: the calldata filter, the extra keys. */
export function chainProblems(v: Record<string, unknown>, p: 'L1' | 'L2'): string[] {
  const problems: string[] = [];
  const get = (suffix: string) => v[`${p}_${suffix}`] as string | undefined;
  const expr = get('EVENT_FILTER_CALLDATA');
  const iface = get('EVENT_FILTER_CALLDATA_FUNCTION_INTERFACE');
  if ((expr === undefined) !== (iface === undefined)) {
    const [set, unset] =
      expr === undefined
        ? [`${p}_EVENT_FILTER_CALLDATA_FUNCTION_INTERFACE`, `${p}_EVENT_FILTER_CALLDATA`]
        : [`${p}_EVENT_FILTER_CALLDATA`, `${p}_EVENT_FILTER_CALLDATA_FUNCTION_INTERFACE`];
    problems.push(`${unset}: required when ${set} is set (the calldata filter needs both)`);
  }
  if (iface !== undefined) {
    try {
      FunctionFragment.from(iface); // the leading `function` keyword is optional
    } catch {
      problems.push(
        `${p}_EVENT_FILTER_CALLDATA_FUNCTION_INTERFACE: expected a function signature with named typed arguments, e.g. "transfer(address to, uint256 amount)", got "${iface}"`,
      );
    }
  }
  if (expr !== undefined) {
    const error = compileCalldataFilter(expr).error;
    if (error)
      problems.push(
        `${p}_EVENT_FILTER_CALLDATA: expected a filter expression over calldata.* (e.g. calldata.funcSignature == "0x26dfbc20" and calldata.amount > 0): ${error}`,
      );
  }
  problems.push(
    ...parseExtraKeys(get('SIGNER_PRIVATE_KEYS'), `${p}_SIGNER_PRIVATE_KEYS`, get('SIGNER_PRIVATE_KEY')).problems,
  );
  return problems;
}

/** One chain's part of the config, from already-checked values. */
export function chainConfig(v: Record<string, unknown>, p: 'L1' | 'L2', signerNeeded: boolean) {
  const get = <T>(suffix: string) => v[`${p}_${suffix}`] as T;
  const expr = get<string | undefined>('EVENT_FILTER_CALLDATA');
  const iface = get<string | undefined>('EVENT_FILTER_CALLDATA_FUNCTION_INTERFACE');
  const calldata =
    expr !== undefined && iface !== undefined
      ? { expression: expr, functionInterface: FunctionFragment.from(iface).format('full') }
      : undefined;
  const fromAddress = get<string | undefined>('EVENT_FILTER_FROM_ADDRESS');
  const toAddress = get<string | undefined>('EVENT_FILTER_TO_ADDRESS');
  const confirmations = get<number>('LISTENER_BLOCK_CONFIRMATION');
  const initial = get<number>('LISTENER_INITIAL_FROM_BLOCK');
  const signer = signerNeeded ? signerConfigFrom(get) : undefined;
  const extraKeys =
    signer?.type === 'private-key'
      ? parseExtraKeys(get('SIGNER_PRIVATE_KEYS'), `${p}_SIGNER_PRIVATE_KEYS`, signer.privateKey).keys
      : [];
  return {
    rpcUrl: get<string>('RPC_URL'),
    contractAddress: get<string>('CONTRACT_ADDRESS'),
    listener: {
      blockConfirmation: confirmations >= 0 ? confirmations : DEFAULT_CONFIRMATIONS,
      initialFromBlock: initial >= 0 ? initial : undefined,
      intervalMs: get<number>('LISTENER_INTERVAL'),
      receiptPollingIntervalMs: get<number>('LISTENER_RECEIPT_POLLING_INTERVAL'),
      maxBlocksToFetchLogs: get<number>('MAX_BLOCKS_TO_FETCH_LOGS'),
      eventFilters:
        fromAddress !== undefined || toAddress !== undefined || calldata !== undefined
          ? { fromAddress, toAddress, calldata }
          : undefined,
    },
    claimViaAddress: get<string | undefined>('CLAIM_VIA_ADDRESS'),
    maxGasFeeEnforced: get<boolean>('MAX_GAS_FEE_ENFORCED'),
    signerMinBalanceWei: get<bigint>('SIGNER_MIN_BALANCE_WEI'),
    /** Undefined when no enabled direction claims on this chain (no key is then required). */
    signer,
    /** Extra signers claiming beside `signer`, each with its own nonces (`*_SIGNER_PRIVATE_KEYS`, private-key only). */
    extraSigners: extraKeys.map((privateKey): SignerConfig => ({ type: 'private-key', privateKey })),
  };
}

export type ChainConfig = ReturnType<typeof chainConfig>;
