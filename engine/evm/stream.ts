import { z } from 'zod';
import { chainFor } from '../chains/lifecycle.js';
import { testWebhook } from '../delivery/webhook.js';
import type { StreamLimits } from '../streams/limits.js';
import { badRequest, overLimit } from '../errors.js';
import { checkFilter } from './advanced-filter.js';
import type { StreamFamily } from '../streams/family.js';
import { streamResponse, type StreamDefinition } from '../streams/model.js';
import { abiEvents, topic0Hash } from '../streams/schemas.js';
import { streamAnswerFields } from '../streams/responses.js';

/** EVM streams: chains from the registry, 0x addresses stored lower-case, the topic0 and abi rules. */
export const EVM_STREAMS: StreamFamily<StreamDefinition> = {
  family: 'evm',
  unmarked: true,
  check: checkEvm,
  response: streamResponse,
  address: (a) => a.toLowerCase(),
  // topic0 as its hashes: the compile reads 32-byte keys.
  watched: (d) => ({ chainIds: d.chainIds, allAddresses: d.allAddresses, keys: { topic0: (d.topic0 ?? []).map(topic0Hash) } }),
  testWebhook,
};

/** Checks what a schema cannot: chains against the registry at the service date, topic0 against the abi, the triggers limit. */
function checkEvm(def: StreamDefinition, now: number, limits: StreamLimits): StreamDefinition {
  // Each trigger is an eth_call per matched item of every block: the operator bounds how many a stream runs.
  if (def.triggers !== null && def.triggers.length > limits.triggers)
    throw overLimit('triggers', 'a stream runs', limits.triggers, 'CHAINPOST_MAX_TRIGGERS');
  const chainIds = def.chainIds.map((c, i) => chainFor(c, 'streams', now, { field: `chainIds.${i}` }).key);
  if (new Set(chainIds).size !== chainIds.length) throw badRequest('chainIds', 'a chain is listed twice');
  if (def.abi !== null && def.topic0 !== null) {
    const events = abiEvents(def.abi);
    def.topic0.forEach((t, i) => {
      if (!events.has(t)) throw badRequest(`topic0.${i}`, `${t} is not an event of the abi`);
    });
  }
  def.advancedOptions?.forEach((o, i) => checkAdvancedOption(o, def.abi, `advancedOptions.${i}`));
  if (def.allAddresses && (def.abi === null || def.topic0 === null || def.topic0.length === 0)) {
    throw badRequest('allAddresses', 'applies only when abi and topic0 are provided');
  }
  return { ...def, chainIds };
}

/** An advancedOptions entry names an event of the abi, and its filter fits that event's parameters. */
function checkAdvancedOption(o: Record<string, unknown>, abi: StreamDefinition['abi'], path: string): void {
  const event = abiEvents(abi).get(String(o['topic0']));
  if (event === undefined) throw badRequest(`${path}.topic0`, `${String(o['topic0'])} is not an event of the abi`);
  if (o['filter'] === undefined) return;
  const problem = checkFilter(o['filter'], event.inputs, `${path}.filter`);
  if (problem !== null) throw badRequest(problem.slice(0, problem.indexOf(':')), problem.slice(problem.indexOf(':') + 2));
}

const jsonObject = z.record(z.string(), z.unknown());

/** The Stream (EVM) as the API answers it (streamResponse, engine/streams/model.ts): the interface's field table. */
export const evmStreamAnswer = z.object({
  ...streamAnswerFields,
  chainIds: z.array(z.string()),
  topic0: z.array(z.string()).nullable(),
  allAddresses: z.boolean(),
  includeNativeTxs: z.boolean(),
  includeContractLogs: z.boolean(),
  includeInternalTxs: z.boolean(),
  includeAllTxLogs: z.boolean(),
  getNativeBalances: z.array(z.object({ selectors: z.array(z.string()), type: z.string() })),
  abi: z.array(jsonObject).nullable().meta({ description: 'The ABI items (an object given alone is answered as a list of one)' }),
  advancedOptions: z
    .array(z.object({ topic0: z.string(), filter: jsonObject.optional(), includeNativeTxs: z.boolean().optional() }))
    .nullable(),
  filterPossibleSpamAddresses: z.boolean(),
  triggers: z
    .array(
      z.object({
        type: z.string(),
        contractAddress: z.string(),
        functionAbi: jsonObject,
        inputs: z.array(z.string()).optional(),
        topic0: z.string().optional(),
        callFrom: z.string().optional(),
      }),
    )
    .nullable(),
});
