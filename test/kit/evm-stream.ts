/** An EVM stream's definition on chain 0x1 watching nothing yet: what engine tests and benches create streams with. */
export const evmDefinition = (webhookUrl: string, tag: string) => ({
  webhookUrl,
  description: '',
  tag,
  chainIds: ['0x1'],
  topic0: null,
  allAddresses: false,
  includeNativeTxs: false,
  includeContractLogs: false,
  includeInternalTxs: false,
  includeAllTxLogs: false,
  getNativeBalances: [],
  abi: null,
  advancedOptions: null,
  filterPossibleSpamAddresses: false,
  demo: false,
  triggers: null,
});
