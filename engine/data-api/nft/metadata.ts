import { decodeFunctionResult, encodeFunctionData, parseAbi } from 'viem/utils';
import type { Hex } from 'viem';
import { z } from 'zod';
import type { Clock } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { ChainReads } from '../../evm/chain-reads.js';
import type { Kv, MetadataFetcher } from '../../ports.js';
import { id64, tokenKey } from './index/writer.js';

/**
 * NFT metadata: the token's URI read by eth_call (ERC-721 tokenURI 0xc87b56dd,
 * ERC-1155 uri 0x0e89341c with `{id}` replaced by the id in 64 hex digits),
 * then its document: a `data:` URI decoded at once; http(s) and ipfs:// (through
 * the configured gateway; without one ipfs stays unfetched) fetched in the
 * background, at most once per token (a resync asks again). Kept in
 * `nftMetadata` (chain/contract/tokenId(64 hex)): a cache of what the contract
 * and the web said, outside the reorg-undone indexes.
 */
export interface NftMetadataRow {
  /** The URI the contract answered ({id} replaced); null when it has none (reverts, empty). */
  uri: string | null;
  /** When the URI was read, ms. */
  uriSync: number;
  /** The document, as compact JSON text; null until fetched (or when it is not JSON, or not fetched at all). */
  metadata: string | null;
  metadataSync: number | null;
  /** inline: from a data: URI; queued: waiting for its one fetch; fetched; failed (error says why); unfetched: no way to fetch it. */
  state: 'none' | 'inline' | 'queued' | 'fetched' | 'failed' | 'unfetched';
  error?: string;
}

/** normalized_metadata: the document's usual fields, each null when it has none. */
export const normalizedMetadataAnswer = z.object({
  name: z.string().nullable(),
  description: z.string().nullable(),
  image: z.string().nullable(),
  external_link: z.string().nullable(),
  animation_url: z.string().nullable(),
  attributes: z.array(
    z.object({
      trait_type: z.string().nullable(),
      value: z.unknown().meta({ description: "The attribute's value as the document has it" }),
      display_type: z.string().nullable(),
      max_value: z.number().nullable(),
      trait_count: z.number().int(),
      order: z.number().nullable(),
    }),
  ),
});

export type NormalizedMetadata = z.infer<typeof normalizedMetadataAnswer>;

const ABI = parseAbi(['function tokenURI(uint256) view returns (string)', 'function uri(uint256) view returns (string)']);
/** Background fetches at once. */
const CONCURRENCY = 4;
/**
 * Fetches waiting at most: beyond, a token stays `queued` and is queued again when next asked about, so a
 * sync of a huge collection cannot grow the queue without bound.
 */
const MAX_QUEUED = 10_000;

export interface NftMetadataOptions {
  /** Base URL of an IPFS HTTP gateway (CHAINPOST_IPFS_GATEWAY); none: ipfs:// documents are not fetched. */
  ipfsGateway?: string | undefined;
  /** Where a row that could not be stored is said (the server's log). */
  log?: Logger | undefined;
}

export class NftMetadata {
  private readonly reading = new Map<string, Promise<NftMetadataRow | undefined>>();
  private readonly queue: Array<{ key: string; url: string }> = [];
  /** Tokens queued or being fetched, each with what resolves once its fetch ended. */
  private readonly fetching = new Map<string, { ended: Promise<void>; end: () => void }>();
  private active = 0;
  /**
   * Rows written whose commit is under way (null: removed). A request that reads a token's URI for the first time
   * (and a finished fetch) writes its row: committed off the event loop, as an fsync on it would hold every other
   * request; until then the row is read here.
   */
  private readonly unwritten = new Map<string, NftMetadataRow | null>();

  constructor(
    private readonly kv: Kv,
    private readonly reads: Pick<ChainReads, 'call'>,
    private readonly fetcher: MetadataFetcher,
    private readonly clock: Clock,
    private readonly opts: NftMetadataOptions = {},
  ) {}

  /** What is stored for the token, if anything. */
  stored(chain: string, contract: string, tokenId: bigint): NftMetadataRow | undefined {
    return this.row(tokenKey(chain, contract, tokenId));
  }

  private row(key: string): NftMetadataRow | undefined {
    if (this.unwritten.has(key)) return this.unwritten.get(key) ?? undefined;
    return this.kv.get<NftMetadataRow>('nftMetadata', key);
  }

  /** Writes (null: removes) a token's row: read from `unwritten` at once, durable once its commit resolves. */
  private write(key: string, row: NftMetadataRow | null): void {
    this.unwritten.set(key, row);
    const settled = (): void => {
      // A later write of the same token holds its own place until its commit.
      if (this.unwritten.get(key) === row) this.unwritten.delete(key);
    };
    // A failed commit (a full disk) leaves the store as it was: the token is asked about again next time, and the log says why.
    const failed = (err: unknown): void => {
      settled();
      this.opts.log?.warn('an NFT metadata row was not stored; the token is read again when next asked', { key, err });
    };
    this.kv
      .transactAsync(() => (row === null ? this.kv.remove('nftMetadata', key) : this.kv.put('nftMetadata', key, row)))
      .then(settled, failed);
  }

  /**
   * The token's row, reading its URI the first time it is asked about (and queueing the document's fetch).
   * Undefined when the node cannot be reached now: nothing is stored, the next request asks again.
   */
  ensure(chain: string, contract: string, tokenId: bigint, kind: 'erc721' | 'erc1155'): Promise<NftMetadataRow | undefined> {
    const key = tokenKey(chain, contract, tokenId);
    const row = this.row(key);
    if (row !== undefined) {
      // Queued before a restart: still owed its one fetch.
      const url = row.state === 'queued' && row.uri !== null ? this.target(row.uri) : undefined;
      if (url !== undefined) this.enqueue(key, url);
      return Promise.resolve(row);
    }
    let reading = this.reading.get(key);
    if (reading === undefined) {
      reading = this.read(chain, contract, tokenId, kind, key).finally(() => this.reading.delete(key));
      this.reading.set(key, reading);
    }
    return reading;
  }

  /**
   * Asks again: `uri` reads the URI and fetches its document anew; `metadata` fetches the document of the
   * stored URI again. Resolves once the URI is read (and, when `wait`, once the document is fetched).
   */
  async resync(
    chain: string,
    contract: string,
    tokenId: bigint,
    kind: 'erc721' | 'erc1155',
    flag: 'uri' | 'metadata',
    wait: boolean,
  ): Promise<NftMetadataRow | undefined> {
    const key = tokenKey(chain, contract, tokenId);
    const row = this.row(key);
    if (flag === 'uri' || row === undefined) {
      this.write(key, null);
      await this.ensure(chain, contract, tokenId, kind);
    } else if (row.uri !== null) {
      this.write(key, this.documentOf(row.uri, row.uriSync, key));
    }
    if (wait) await this.fetched(key);
    return this.row(key);
  }

  /** Resolves once the token's document is no longer being fetched (`mode=sync`); the fetch itself is bounded by the fetcher's timeout. */
  private async fetched(key: string): Promise<void> {
    await this.fetching.get(key)?.ended;
  }

  private async read(
    chain: string,
    contract: string,
    tokenId: bigint,
    kind: 'erc721' | 'erc1155',
    key: string,
  ): Promise<NftMetadataRow | undefined> {
    const functionName = kind === 'erc721' ? 'tokenURI' : 'uri';
    let out: Hex | null;
    try {
      out = await this.reads.call(chain, contract, encodeFunctionData({ abi: ABI, functionName, args: [tokenId] }), 'latest');
    } catch {
      return undefined; // the node cannot be reached: ask again next time
    }
    let uri: string | null = null;
    if (out !== null && out !== '0x') {
      try {
        uri = decodeFunctionResult({ abi: ABI, functionName, data: out }) as string;
      } catch {
        uri = null;
      }
    }
    if (uri !== null && kind === 'erc1155') uri = uri.replaceAll('{id}', id64(tokenId));
    const now = this.clock.now();
    const row: NftMetadataRow =
      uri === null || uri === ''
        ? { uri: null, uriSync: now, metadata: null, metadataSync: null, state: 'none' }
        : this.documentOf(uri, now, key);
    this.write(key, row);
    return row;
  }

  /** The row for a URI: its data: document decoded, or its fetch queued, or unfetched. */
  private documentOf(uri: string, uriSync: number, key: string): NftMetadataRow {
    const base = { uri, uriSync };
    if (uri.startsWith('data:')) {
      const text = decodeDataUri(uri);
      const doc = text === undefined ? undefined : jsonDocument(text);
      return doc === undefined
        ? { ...base, metadata: null, metadataSync: this.clock.now(), state: 'failed', error: 'the data: URI holds no JSON document' }
        : { ...base, metadata: doc, metadataSync: this.clock.now(), state: 'inline' };
    }
    const url = this.target(uri);
    if (url === undefined) return { ...base, metadata: null, metadataSync: null, state: 'unfetched' };
    this.enqueue(key, url);
    return { ...base, metadata: null, metadataSync: null, state: 'queued' };
  }

  /** Where a URI's document is fetched: http(s) as it is, ipfs:// through the gateway; undefined: nowhere. */
  private target(uri: string): string | undefined {
    if (/^https?:\/\//i.test(uri)) return uri;
    const ipfs = /^ipfs:\/\/(?:ipfs\/)?(.+)$/i.exec(uri);
    if (ipfs === null || this.opts.ipfsGateway === undefined) return undefined;
    const gateway = this.opts.ipfsGateway.replace(/\/+$/, '');
    return `${/\/ipfs$/.test(gateway) ? gateway : `${gateway}/ipfs`}/${ipfs[1]}`;
  }

  private enqueue(key: string, url: string): void {
    if (this.fetching.has(key) || this.queue.length >= MAX_QUEUED) return;
    let end = (): void => undefined;
    const ended = new Promise<void>((resolve) => (end = resolve));
    this.fetching.set(key, { ended, end });
    this.queue.push({ key, url });
    this.pump();
  }

  private pump(): void {
    while (this.active < CONCURRENCY && this.queue.length > 0) {
      const job = this.queue.shift()!;
      this.active++;
      void this.fetchOne(job.key, job.url).finally(() => {
        this.active--;
        this.fetching.get(job.key)?.end();
        this.fetching.delete(job.key);
        this.pump();
      });
    }
  }

  private async fetchOne(key: string, url: string): Promise<void> {
    const got = await this.fetcher.get(url);
    const row = this.row(key);
    // A resync replaced the URI meanwhile: that one is fetched instead.
    if (row === undefined || row.state !== 'queued' || this.target(row.uri ?? '') !== url) return;
    const doc = 'body' in got ? jsonDocument(got.body) : undefined;
    const { error: _before, ...rest } = row;
    const done: NftMetadataRow =
      doc !== undefined
        ? { ...rest, metadata: doc, metadataSync: this.clock.now(), state: 'fetched' }
        : {
            ...rest,
            metadata: null,
            metadataSync: this.clock.now(),
            state: 'failed',
            error: 'error' in got ? got.error : 'the document is not JSON',
          };
    this.write(key, done);
  }
}

/** A data: URI's text (base64 or percent-encoded); undefined when it is not one. */
export function decodeDataUri(uri: string): string | undefined {
  const m = /^data:([^,]*),(.*)$/s.exec(uri);
  if (m === null) return undefined;
  const [, params, data] = m as unknown as [string, string, string];
  if (/;base64$/i.test(params)) return Buffer.from(data, 'base64').toString('utf8');
  try {
    return decodeURIComponent(data);
  } catch {
    return data;
  }
}

/** The text as compact JSON when it is a JSON object; undefined otherwise. */
function jsonDocument(text: string): string | undefined {
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? JSON.stringify(v) : undefined;
  } catch {
    return undefined;
  }
}

const text = (v: unknown): string | null => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : null);

/** normalized_metadata of a document (null without one). */
export function normalize(metadata: string | null): NormalizedMetadata | null {
  if (metadata === null) return null;
  const d = JSON.parse(metadata) as Record<string, unknown>;
  const attrs = Array.isArray(d['attributes']) ? (d['attributes'] as unknown[]) : [];
  return {
    name: text(d['name']),
    description: text(d['description']),
    image: text(d['image']) ?? text(d['image_url']),
    external_link: text(d['external_url']) ?? text(d['external_link']),
    animation_url: text(d['animation_url']),
    attributes: attrs
      .filter((a): a is Record<string, unknown> => a !== null && typeof a === 'object')
      .map((a) => ({
        trait_type: text(a['trait_type']),
        value: a['value'] ?? null,
        display_type: text(a['display_type']),
        max_value: typeof a['max_value'] === 'number' ? a['max_value'] : null,
        trait_count: 0,
        order: null,
      })),
  };
}
