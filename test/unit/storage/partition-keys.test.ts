import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { statsOf } from '../../../engine/delivery/attempt-records.js';
import { findHistory, keyInPartition0, tenantRanges } from '../../../engine/delivery/records.js';
import { openStore, renameKeys, upgradeSchema } from '../../../storage/env.js';
import { tempDir } from '../../helpers.js';

/** The migration of a version-7 store's delivery rows, kept in no partition, to partition 0 (schema version 8). */

const T = 't_0123456789abcdef';
const ID = '01937a8c-0000-7000-8000-000000000001';
const LOG = '01937a8c-0000-7000-8000-000000000002';
const S = '5d1c0f6e-aaaa-4bbb-8ccc-000000000001';
const stats = (delivered: number) => ({
  totalWebhooksDelivered: delivered,
  totalWebhooksFailed: 1,
  totalLogsProcessed: 0,
  totalTxsProcessed: 0,
  totalTxsInternalProcessed: 0,
  createdAt: '2026-11-23T00:00:00.000Z',
  updatedAt: '2026-11-24T00:00:00.000Z',
});
/** Each table's rows as version 7 wrote them, and where version 8 keeps them. */
const ROWS: Array<[table: 'history' | 'deliveryLogs' | 'counts' | 'stats', v7: string, v8: string, value: unknown]> = [
  ['history', `${T}/${ID}`, `${T}/#00/${ID}`, { id: ID, streamId: S }],
  ['deliveryLogs', `${T}/s/${LOG}`, `${T}/#00/s/${LOG}`, [S, '0x1', 'http://127.0.0.1:9/', '', 0, '1', '']],
  ['counts', `history/${T}/`, `history/${T}/#00/`, 1],
  ['counts', `deliveryLogs/${T}/s/`, `deliveryLogs/${T}/#00/s/`, 1],
  ['stats', T, `${T}/#00`, stats(3)],
  ['stats', `${T}/${S}`, `${T}/${S}/#00`, stats(2)],
];

describe('delivery rows at the upgrade to partitions', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('move to partition 0, once each, and read as before', async () => {
    dir = tempDir();
    const old = openStore(dir);
    old.transact(() => {
      for (const [table, key, , value] of ROWS) old.put(table, key, value);
      old.put('meta', 'schemaVersion', 7);
    });
    await old.close();
    const s = openStore(dir, { migrate: true });
    expect(upgradeSchema(s)).toEqual({ from: 7, rewrittenKeys: ROWS.length });
    for (const table of ['history', 'deliveryLogs', 'counts', 'stats'] as const)
      expect(s.keys(table, {}), table).toEqual(
        ROWS.filter(([t]) => t === table)
          .map(([, , v8]) => v8)
          .sort(),
      );
    for (const [table, , v8, value] of ROWS) expect(s.get(table, v8)).toEqual(value);
    expect(statsOf(s, T, '')).toEqual(stats(3));
    expect(statsOf(s, `${T}/${S}`, '')).toEqual(stats(2));
    expect(tenantRanges(s, T, 'deliveryLogs').total).toBe(1);
    expect(findHistory(s, T, ID)).toMatchObject({ partition: 0, record: { id: ID } });
    // Walked again (a migration cut short), in batches of 2: nothing moves twice.
    for (const table of ['history', 'deliveryLogs', 'counts', 'stats'] as const)
      expect(
        renameKeys(s, table, (key) => keyInPartition0(table, key), 2),
        table,
      ).toBe(0);
    await s.close();
  });
});
