import { resolve } from 'node:path';
import { Wallet, parseEther, isAddress, getAddress } from 'ethers';
import type { Command } from './command.js';
import { UsageError } from './command.js';
import { intFlag, stringFlag, stringOptions } from './args.js';
import { L1MessageService__factory, L2MessageService__factory } from '../../generated/contracts/types/index.js';
import { createProvider } from '../common/chain/provider.js';
import { ROLES } from '../devnet/accounts.js';
import { DEFAULT_STATE_FILE, readStateFile } from '../devnet/state-file.js';
import { mined } from '../common/chain/mined.js';

function etherFlag(name: string, raw: unknown, fallback: string): bigint {
  const s = raw === undefined ? fallback : String(raw);
  if (!/^\d+(\.\d{1,18})?$/.test(s))
    throw new UsageError(`--${name} must be a non-negative amount of ether (e.g. 0.01), got "${s}"`);
  return parseEther(s);
}

export const sendMessageCommand: Command = {
  name: 'send-message',
  summary: 'send a message through the devnet message service and print its hash',
  options: stringOptions('from', 'to', 'value', 'fee', 'calldata', 'account', 'state-file'),
  optionHelp: [
    '--from l1|l2        the layer the message is sent on (required)',
    '--to ADDRESS        recipient on the other layer (default: the sender)',
    '--value ETH         ether delivered to the recipient (default 0.01)',
    '--fee ETH           fee paid to whoever claims it (default 0.001)',
    '--calldata HEX      calldata executed on the recipient (default 0x: none)',
    `--account N         index of the devnet account that sends (default ${ROLES.user})`,
    `--state-file PATH   the devnet's state file (default ${DEFAULT_STATE_FILE})`,
  ],
  async run({ values }) {
    const from = stringFlag(values.from);
    if (from !== 'l1' && from !== 'l2')
      throw new UsageError(`--from must be l1 or l2, got ${from === undefined ? 'nothing' : `"${from}"`}`);
    const to = stringFlag(values.to);
    if (to !== undefined && !isAddress(to))
      throw new UsageError(`--to must be a 0x-prefixed 20-byte address, got "${to}"`);
    const value = etherFlag('value', values.value, '0.01');
    const fee = etherFlag('fee', values.fee, '0.001');
    const calldata = stringFlag(values.calldata) ?? '0x';
    if (!/^0x([0-9a-fA-F]{2})*$/.test(calldata))
      throw new UsageError(`--calldata must be 0x-prefixed hex bytes, got "${calldata}"`);
    const state = await readStateFile(resolve(stringFlag(values['state-file']) ?? DEFAULT_STATE_FILE));
    const index = intFlag('account', values.account, ROLES.user);
    const account = state.accounts[index];
    if (!account) throw new UsageError(`--account must be 0..${state.accounts.length - 1}, got ${index}`);

    const chain = from === 'l1' ? state.l1 : state.l2;
    const rpcUrl = from === 'l1' ? state.l1.rpcUrl : state.l2.upstreamRpcUrl;
    const provider = createProvider(rpcUrl, chain.chainId, { pollingInterval: 100 });
    try {
      const factory = from === 'l1' ? L1MessageService__factory : L2MessageService__factory;
      const service = factory.connect(chain.messageService, new Wallet(account.privateKey, provider));
      const tx = await service.sendMessage(to ? getAddress(to) : account.address, fee, calldata, {
        value: value + fee,
      });
      const receipt = await mined(tx);
      const event = receipt?.logs.map((l) => service.interface.parseLog(l)).find((e) => e?.name === 'MessageSent');
      if (!event) throw new Error(`transaction ${tx.hash} emitted no MessageSent event`);
      process.stdout.write(`${event.args._messageHash as string}\n`);
      return 0;
    } finally {
      provider.destroy();
    }
  },
};
