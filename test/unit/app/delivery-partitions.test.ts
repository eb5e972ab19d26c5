import { describe, expect, it } from 'vitest';
import { wireDeliveryPartitions } from '../../../app/cluster.js';
import { PartitionLink } from '../../../app/delivery.js';
import type { PartitionLog, PartitionLogEvent } from '../../../engine/cluster/partition-log.js';
import type { OwnerEvent } from '../../../engine/cluster/owners.js';
import type { PendingUnit } from '../../../engine/cluster/partitions.js';
import { quietLog } from '../../kit/quiet-log.js';

/**
 * How a cluster node's owners, partition log and dispatcher are wired (wireDeliveryPartitions): each event of one
 * makes the calls the others need, in order; what is called is written down as it happens.
 */
function scene() {
  const calls: string[] = [];
  let ownerListener: (e: OwnerEvent) => void = () => {};
  let logListener: (e: PartitionLogEvent) => void = () => {};
  let handOver: (p: number) => Promise<void> = async () => {};
  const writable = new Set<number>();
  /** The partitions whose units the log keeps (their leases lapsed). */
  const kept = new Set<number>();
  const log: PartitionLog = {
    take: async (p, revision) => (calls.push(`take ${p} at ${revision}`), true),
    release: async (p, keep) => {
      calls.push(`release ${p}${keep === true ? ' keeping its units' : ''}`);
      if (keep === true) kept.add(p);
    },
    keeps: (p) => kept.has(p),
    writable: (p) => writable.has(p),
    submit: (units) => units.map((u) => (calls.push(`submit ${u.change.partition}`), Promise.resolve())),
    drained: async (p) => (calls.push(`drained ${p}`), true),
    onEvent: (l) => ((logListener = l), () => {}),
  };
  const link = new PartitionLink();
  const stop = wireDeliveryPartitions({
    owners: {
      onEvent: (l) => ((ownerListener = l), () => true),
      setHandOver: (hook) => void (handOver = hook),
      giveUp: async (p) => void calls.push(`give up ${p}`),
    },
    log,
    dispatcher: {
      adopt: (p) => void calls.push(`adopt ${p}`),
      drop: (p) => void calls.push(`drop ${p}`),
      handOver: async (p) => void calls.push(`hand over ${p}`),
      resume: (p) => void calls.push(`resume ${p}`),
    },
    link,
    ttlMs: 1_000,
    logger: quietLog(),
  });
  return {
    calls,
    link,
    writable,
    kept,
    owner: (e: OwnerEvent) => ownerListener(e),
    log: (e: PartitionLogEvent) => logListener(e),
    handOver: (p: number) => handOver(p),
    stop,
  };
}

const unit = (partition: number): PendingUnit => ({ change: { partition, rows: [] }, before: [] });

describe('delivery wired to the partitions a cluster node owns', () => {
  it('takes a held partition’s log, adopts it once ready, and publishes only the units of partitions adopted', async () => {
    const s = scene();
    s.owner({ kind: 'held', partition: 3, revision: 17 });
    await Promise.resolve();
    expect(s.link.owns(3)).toBe(false);
    s.log({ kind: 'ready', partition: 3, revision: 17 });
    expect(s.link.owns(3)).toBe(true);
    s.link.submit([unit(3), unit(4)]);
    expect(s.calls).toEqual(['take 3 at 17', 'adopt 3', 'submit 3']);
    // Writable only while its log is.
    expect(s.link.writable(3)).toBe(false);
    s.writable.add(3);
    expect(s.link.writable(3)).toBe(true);
    s.stop();
  });

  it('drops a partition at once when its lease is lost, and gives the lease up when its log lost it', async () => {
    const s = scene();
    for (const p of [1, 2]) s.log({ kind: 'ready', partition: p, revision: 1 });
    s.owner({ kind: 'lost', partition: 1, reason: 'unrenewed' });
    s.log({ kind: 'lost', partition: 2, reason: 'refused' });
    // Released by the owners (its log's answer): nothing more to give up.
    s.log({ kind: 'lost', partition: 1, reason: 'released' });
    await Promise.resolve();
    expect(s.calls).toEqual(['adopt 1', 'adopt 2', 'drop 1', 'release 1 keeping its units', 'drop 2', 'give up 2', 'drop 1']);
    expect([s.link.owns(1), s.link.owns(2)]).toEqual([false, false]);
    // A unit committed since (an attempt ending) goes to the log while it keeps partition 1's units, to no other.
    expect([...s.kept]).toEqual([1]);
    s.link.submit([unit(1), unit(2)]);
    expect(s.calls.at(-1)).toBe('submit 1');
    expect(s.calls.filter((c) => c.startsWith('submit'))).toEqual(['submit 1']);
    s.stop();
  });

  it('has a follower added late adopt the partitions adopted already, then follow the next adoptions and drops', () => {
    const s = scene();
    s.log({ kind: 'ready', partition: 6, revision: 1 });
    const followed: string[] = [];
    s.link.follow({ adopt: (p) => void followed.push(`adopt ${p}`), drop: (p) => void followed.push(`drop ${p}`) });
    s.log({ kind: 'ready', partition: 9, revision: 1 });
    s.log({ kind: 'lost', partition: 6, reason: 'refused' });
    expect(followed).toEqual(['adopt 6', 'adopt 9', 'drop 6']);
    s.stop();
  });

  it('hands a partition over once its attempts in flight ended, then its units published', async () => {
    const s = scene();
    s.log({ kind: 'ready', partition: 5, revision: 2 });
    await s.handOver(5);
    expect(s.calls).toEqual(['adopt 5', 'hand over 5', 'drained 5']);
    s.stop();
  });
});
