import { EVERY } from '../match/filter-set.js';
import type { BuildWebhook } from '../match/build.js';
import type { StoredStream } from '../streams/model.js';
import { solanaBody } from './body.js';
import { SolRecordView } from './record.js';

/**
 * A Solana stream's webhook for a slot: the transactions its addresses,
 * programIds and mintAddresses matched (the walk's refs are transaction
 * indexes) and, for allAddresses (the ref EVERY), every transaction that is not
 * a vote; the union in block order. A vote reaches a stream only through its
 * programIds naming the Vote program. None when nothing is left.
 *
 * The stream needs only its id and tag here: what it watches reached the refs
 * through the filter set (engine/solana/filter.ts).
 */
export function solanaWebhookBuilder(): BuildWebhook<StoredStream> {
  return (block, stream, refs) => {
    const view = SolRecordView.shared(block.bytes);
    const txIndexes = solanaTxIndexes(view, refs);
    if (txIndexes.length === 0) return Promise.resolve(null);
    // A SolanaBody is a plain JSON object (an interface has no index signature to say so).
    return Promise.resolve(
      solanaBody(view, { streamId: stream.id, tag: stream.tag, confirmed: block.confirmed, txIndexes }) as unknown as Record<
        string,
        unknown
      >,
    );
  };
}

/** The transactions refs stand for, in block order, each once: EVERY adds every transaction but votes. */
export function solanaTxIndexes(view: Pick<SolRecordView, 'txCount' | 'isVote'>, refs: readonly number[]): number[] {
  if (!refs.includes(EVERY)) return refs.length < 2 ? [...refs] : [...new Set(refs)].sort((a, b) => a - b);
  const wanted = new Uint8Array(view.txCount);
  for (const r of refs) if (r !== EVERY) wanted[r] = 1;
  const out: number[] = [];
  for (let i = 0; i < view.txCount; i++) if (wanted[i] === 1 || !view.isVote(i)) out.push(i);
  return out;
}
