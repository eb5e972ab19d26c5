import {
  hostedOperations,
  type FamilyEffectParts,
  type Family,
  type PrepareParts,
  type StreamParts,
  type SubResource,
} from '../families/family.js';
import { followBitcoin, type BitcoinFollowParts } from './follow.js';
import { BitcoinStreams, xpubAnswers } from './stream-service.js';
import { bitcoinBlockStore, type BitcoinIngestPool } from './prepared.js';
import { bitcoinDefinition, bitcoinReplay } from './replay.js';
import { XpubWindows, type WindowDeriver } from './xpub-windows.js';
import { BitcoinWallets, type BitcoinState } from './wallets.js';
import { prepareTable } from './secp256k1-table.js';
import { bitcoinWebhookBuilder } from './webhook.js';
import { blockKey } from '../ingest/chain-store.js';
import type { Kv } from '../ports.js';
import {
  bitcoinAddressBody,
  BITCOIN_STREAMS,
  bitcoinStreamAnswer,
  blockRequestBody,
  createBitcoinStream,
  updateBitcoinStream,
  xpubBody,
  type BitcoinStreamDefinition,
  type BitcoinStreamRecord,
} from './stream.js';
import type { BuildWebhook } from '../match/build.js';
import bitcoinWorker from './worker.js';

/** A stream's extended keys (/streams/bitcoin/:id/xpub): the addresses each derives are watched with the stream's own. */
const xpubs: SubResource<BitcoinStreams, { xpub: string }> = {
  name: 'xpub',
  body: xpubBody,
  item: { param: 'xpubId', what: 'an xpub id' },
  add: (streams, tenant, streamId, { xpub }) => streams.addXpub(tenant, streamId, xpub),
  list: (streams, tenant, streamId, limit, cursor) => streams.listXpubs(tenant, streamId, limit, cursor),
  remove: (streams, tenant, streamId, xpubId) => streams.removeXpub(tenant, streamId, xpubId),
  answers: xpubAnswers,
  operations: { add: 'bitcoinStreamsAddXpub', list: 'bitcoinStreamsGetXpubs', remove: 'bitcoinStreamsDeleteXpub' },
};

/** The Bitcoin family (engine/families/family.ts): its streams have extended keys beyond the shared resources. */
export const bitcoin = {
  // Its name, match step and tasks: a worker of the pool loads only these (worker.ts).
  ...bitcoinWorker,
  streams: BITCOIN_STREAMS,
  resources: (p: StreamParts, { wallets }: BitcoinState) =>
    new BitcoinStreams(p.kv, p.clock, p.dispatcher, p.limits, p.targets, p.followed, p.plane),
  effects: ({ watch }: FamilyEffectParts, { wallets }: BitcoinState) => wallets.effects(watch),
  follow: followBitcoin,
  blocks: bitcoinBlockStore,
  webhooks: ({ kv }: BitcoinWebhookParts, { wallets }: BitcoinState) =>
    bitcoinWebhookBuilder({
      probe: (chain, n) => copyOf(kv.getRaw('probes', blockKey(chain, n))),
      windows: wallets.windows,
      grown: (id) => wallets.grown(id),
    }),
  // The addresses its xpubs derive are matched too.
  replay: (build: BuildWebhook<BitcoinStreamRecord>, _parts: BitcoinWebhookParts, { wallets }: BitcoinState) =>
    bitcoinReplay(build, wallets.windows),
  pool: (run): { bitcoin: BitcoinIngestPool; xpubs: WindowDeriver } => ({
    bitcoin: { prepare: (chain, answers) => run('bitcoin', { chain, answers }, [answers.block]) },
    xpubs: { derive: (task) => run('xpubWindow', task) },
  }),
  api: {
    create: createBitcoinStream,
    update: updateBitcoinStream,
    address: bitcoinAddressBody,
    stream: bitcoinStreamAnswer,
    blockRequest: blockRequestBody.transform(bitcoinDefinition),
    subResources: [xpubs],
    operations: hostedOperations('bitcoin'),
  },
  /** The xpubs of its streams (their windows rebuilt from the store), made before the watchlist, which compiles the addresses they derive. */
  prepare({ config, kv }: PrepareParts): BitcoinState {
    // Deriving xpub addresses needs a table of multiples of G: built now, before requests are served, not at the first xpub added.
    if (config.bitcoin.url !== undefined) prepareTable();
    const windows = new XpubWindows(config.bitcoin.gap);
    const wallets = new BitcoinWallets(kv, windows);
    wallets.load();
    return { wallets, derived: (id) => windows.keysOf(id) };
  },
} satisfies Family<BitcoinStreamDefinition, BitcoinStreams, BitcoinFollowParts, BitcoinWebhookParts, BitcoinState>;

/** What Bitcoin's webhooks read: the blocks' probe columns in the store. */
interface BitcoinWebhookParts {
  kv: Kv;
}

/** A copy of bytes read from the store (valid only until the next read there). */
const copyOf = (bytes: Uint8Array | undefined): Uint8Array | undefined =>
  bytes === undefined ? undefined : Uint8Array.prototype.slice.call(bytes);
