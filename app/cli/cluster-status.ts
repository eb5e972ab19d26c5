/**
 * `chainpost status --cluster`: the whole cluster as its NATS servers hold it (CHAINPOST_NATS): the nodes of the
 * registry with their roles and lags, the chains' leases with their holders, where each delivery partition lives,
 * the streams' sizes.
 */
import { redactedServers } from '../../bus/connect.js';
import { readCluster, type ClusterState } from '../../bus/nodes.js';
import type { Config } from '../../engine/config/config.js';
import type { NodeEntry } from '../../engine/cluster/node.js';
import { PARTITIONS } from '../../engine/cluster/partitions.js';
import { connectNats, NATS_WAIT_MS } from '../cluster.js';

/** Reads the cluster from CHAINPOST_NATS; throws naming the servers (credentials masked) when none answers. */
async function clusterState(nats: NonNullable<Config['nats']>): Promise<ClusterState> {
  const bus = await connectNats(nats, undefined, NATS_WAIT_MS, 'chainpost status');
  try {
    return await readCluster(bus, NATS_WAIT_MS);
  } finally {
    await bus.close();
  }
}

/** What the command prints: the cluster as text, or as one JSON object (`json`). */
export async function clusterStatus(nats: NonNullable<Config['nats']>, json: boolean): Promise<string> {
  const state = await clusterState(nats);
  return json ? `${JSON.stringify(state, null, 2)}\n` : renderCluster(redactedServers(nats.servers.join(',')), state, Date.now());
}

/** Columns padded to their widest cell, two spaces apart, each line indented. */
function columns(rows: readonly string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => `  ${r.map((c, i) => c.padEnd(widths[i]!)).join('  ')}`.trimEnd()).join('\n');
}

const ago = (iso: string, now: number): string => `${Math.max(0, Math.round((now - Date.parse(iso)) / 1000))} s ago`;

/** A node's control-log position and lag: `12 (lag 0)`, `12 (lag ?)` before the node could read the log. */
const control = (n: NodeEntry): string => `${n.control.applied} (lag ${n.control.lag ?? '?'})`;

const list = (items: readonly string[]): string => (items.length === 0 ? '-' : items.join(','));

/** Partitions as runs: `0-2,5,9-10`. */
function runs(partitions: readonly number[]): string {
  const sorted = [...partitions].sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    out.push(i === j ? String(sorted[i]) : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return out.join(',');
}

/**
 * Where the delivery partitions live: each owner's, then those no node owns. Left out while no node owns partitions
 * nor says it would (a cluster of an older version).
 */
function partitionLines({ nodes, partitions }: ClusterState): string[] {
  if (partitions.length === 0 && !nodes.some((n) => Array.isArray(n.partitions))) return [];
  const byNode = new Map<string, number[]>();
  for (const p of partitions) byNode.set(p.node, [...(byNode.get(p.node) ?? []), p.partition]);
  const owned = new Set(partitions.map((p) => p.partition));
  const unowned = Array.from({ length: PARTITIONS }, (_, p) => p).filter((p) => !owned.has(p));
  const rows = [...byNode].sort(([a], [b]) => a.localeCompare(b));
  if (unowned.length > 0) rows.push(['(unowned)', unowned]);
  return [
    `partitions: ${owned.size} of ${PARTITIONS} owned`,
    columns([['OWNER', 'COUNT', 'PARTITIONS'], ...rows.map(([node, ps]) => [node, String(ps.length), runs(ps)])]),
  ];
}

/** The cluster in plain text: nodes, leases, partitions, streams. */
export function renderCluster(servers: string, state: ClusterState, now: number): string {
  const { nodes, leases, streams } = state;
  const out = [`cluster at ${servers}: ${nodes.length} node${nodes.length === 1 ? '' : 's'}`];
  if (nodes.length > 0)
    out.push(
      columns([
        ['NODE', 'ROLES', 'VERSION', 'HTTP', 'BUS', 'CONTROL', 'LEASES', 'CONSUMERS', 'SEEN'],
        ...nodes.map((n) => [
          n.node,
          list(n.roles ?? []),
          n.version ?? '?',
          n.http ?? '-',
          n.bus?.up === false ? 'down' : 'up',
          n.control === undefined ? '?' : control(n),
          list((n.leases ?? []).map((l) => `${l.chain}@${l.revision}`)),
          list((n.consumers ?? []).map((c) => `${c.name} (lag ${c.lag})`)),
          n.seenAt === undefined ? '?' : ago(n.seenAt, now),
        ]),
      ]),
    );
  out.push(leases.length === 0 ? 'leases: none held' : 'leases:');
  if (leases.length > 0) out.push(columns([['CHAIN', 'HOLDER', 'REVISION'], ...leases.map((l) => [l.chain, l.node, String(l.revision)])]));
  out.push(...partitionLines(state));
  out.push('streams:');
  out.push(
    columns([
      ['STREAM', 'MESSAGES', 'BYTES', 'LAST SEQ'],
      ...streams.map((s) =>
        'absent' in s ? [s.name, '-', '-', 'absent'] : [s.name, String(s.messages), String(s.bytes), String(s.lastSeq)],
      ),
    ]),
  );
  return `${out.join('\n')}\n`;
}
