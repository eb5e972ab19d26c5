/**
 * `chainpost status --cluster`: the whole cluster as its NATS servers hold it (CHAINPOST_NATS): the nodes of the
 * registry with their roles and lags, the chains' leases with their holders, the streams' sizes.
 */
import { redactedServers } from '../../bus/connect.js';
import { readCluster, type ClusterState } from '../../bus/nodes.js';
import type { Config } from '../../engine/config/config.js';
import type { NodeEntry } from '../../engine/cluster/node.js';
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

/** The cluster in plain text: nodes, leases, streams. */
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
