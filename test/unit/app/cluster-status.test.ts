import { describe, expect, it } from 'vitest';
import { renderCluster } from '../../../app/cli/cluster-status.js';
import type { ClusterState } from '../../../bus/nodes.js';
import type { NodeEntry } from '../../../engine/cluster/node.js';

const entry = (node: string, fields: Partial<NodeEntry>): NodeEntry => ({
  v: 1,
  node,
  roles: ['api', 'ingest', 'match', 'deliver'],
  version: '0.1.0',
  startedAt: '2026-01-01T00:00:00.000Z',
  seenAt: '2026-01-01T00:10:00.000Z',
  http: '10.0.0.5:8080',
  bus: { up: true, servers: 'nats://10.0.0.9:4222' },
  leases: [],
  control: { applied: 12, last: 12, lag: 0 },
  consumers: [],
  ...fields,
});

describe('chainpost status --cluster: the text', () => {
  it('draws a line per node with its roles, address, bus, control log lag, leases, consumers and age; the leases by chain; the streams', () => {
    const state: ClusterState = {
      nodes: [
        entry('a-host-x1', { leases: [{ chain: '0x1', revision: 40 }], consumers: [{ name: 'bitcoin', lag: 2 }] }),
        entry('b-host-y2', {
          roles: ['ingest', 'match', 'deliver'],
          http: null,
          bus: { up: false, servers: 'nats://10.0.0.9:4222' },
          control: { applied: 9, last: null, lag: null },
          seenAt: '2026-01-01T00:09:53.000Z',
        }),
      ],
      leases: [{ chain: '0x1', node: 'a-host-x1', revision: 41 }],
      partitions: [],
      streams: [
        { name: 'CHAINPOST_CONTROL', messages: 12, bytes: 3400, lastSeq: 12 },
        { name: 'CHAINPOST_BLOCKS', absent: true },
      ],
    };
    expect(renderCluster('nats://***@10.0.0.9:4222', state, Date.parse('2026-01-01T00:10:01Z'))).toBe(
      [
        'cluster at nats://***@10.0.0.9:4222: 2 nodes',
        '  NODE       ROLES                     VERSION  HTTP           BUS   CONTROL     LEASES  CONSUMERS        SEEN',
        '  a-host-x1  api,ingest,match,deliver  0.1.0    10.0.0.5:8080  up    12 (lag 0)  0x1@40  bitcoin (lag 2)  1 s ago',
        '  b-host-y2  ingest,match,deliver      0.1.0    -              down  9 (lag ?)   -       -                8 s ago',
        'leases:',
        '  CHAIN  HOLDER     REVISION',
        '  0x1    a-host-x1  41',
        'streams:',
        '  STREAM             MESSAGES  BYTES  LAST SEQ',
        '  CHAINPOST_CONTROL  12        3400   12',
        '  CHAINPOST_BLOCKS   -         -      absent',
        '',
      ].join('\n'),
    );
  });

  it('says where each delivery partition lives, as runs per owner, and which no node owns', () => {
    const ownedBy = (node: string, partitions: number[]) => partitions.map((partition) => ({ partition, node, revision: 7 }));
    const state: ClusterState = {
      nodes: [entry('a-host-x1', { partitions: [] }), entry('b-host-y2', { partitions: [] })],
      leases: [],
      partitions: [
        ...ownedBy('b-host-y2', [5, 0, 1, 2, 9]),
        ...ownedBy(
          'a-host-x1',
          Array.from({ length: 50 }, (_, i) => 12 + i),
        ),
        ...ownedBy('c-host-gone', [62]),
      ],
      streams: [],
    };
    const text = renderCluster('nats://10.0.0.9:4222', state, Date.parse('2026-01-01T00:10:01Z'));
    expect(text.split('\n').slice(4, 10)).toEqual([
      'leases: none held',
      'partitions: 56 of 64 owned',
      '  OWNER        COUNT  PARTITIONS',
      '  a-host-x1    50     12-61',
      '  b-host-y2    5      0-2,5,9',
      '  c-host-gone  1      62',
    ]);
    expect(text).toContain('\n  (unowned)    8      3-4,6-8,10-11,63\n');
    // A cluster whose nodes own no partitions (an older version): no such section.
    expect(renderCluster('nats://10.0.0.9:4222', { ...state, nodes: [entry('a-host-x1', {})], partitions: [] }, 0)).not.toContain(
      'partitions:',
    );
  });
});
