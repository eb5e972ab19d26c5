import type { JetStreamManager } from '@nats-io/jetstream';
import type { KV, KvEntry } from '@nats-io/kv';

/** The stream JetStream keeps a KV bucket in. */
export const bucketStream = (bucket: string): string => `KV_${bucket}`;

/**
 * The keys of a KV bucket that hold a message (those `pattern` matches, a subject wildcard), with their values: the keys are the subjects of the bucket's stream
 * (one request, bounded like the others: kv.keys(), a consumer over the bucket, did not always finish while writes
 * kept coming, and a test waited 60 s on it), then one read per key. A key may have expired or been deleted between
 * the listing and its read: it is left out, and so is a delete marker.
 */
export async function bucketEntries(
  kv: KV,
  jsm: JetStreamManager,
  bucket: string,
  pattern = '>',
): Promise<Array<{ key: string; entry: KvEntry }>> {
  const prefix = `$KV.${bucket}.`;
  const info = await jsm.streams.info(bucketStream(bucket), { subjects_filter: `${prefix}${pattern}` });
  const keys = Object.keys(info.state.subjects ?? {}).map((subject) => subject.slice(prefix.length));
  const found: Array<{ key: string; entry: KvEntry }> = [];
  for (const key of keys.sort()) {
    const entry = await kv.get(key);
    if (entry !== null && entry.operation === 'PUT') found.push({ key, entry });
  }
  return found;
}
