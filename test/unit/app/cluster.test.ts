import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkClusterFiles, nodeId } from '../../../app/cluster.js';
import { cli } from '../../helpers.js';
import { openStore } from '../../../storage/env.js';
import { ConfigError } from '../../../engine/config/config.js';
import { tempDir } from '../../helpers.js';

describe("a cluster node's files at start", () => {
  const nats = (creds: string | undefined) => ({ nats: { servers: ['nats://127.0.0.1:4222'], creds } });

  it('accepts a creds file it can read, and no creds file (the credentials in the URL, or none)', () => {
    const dir = tempDir();
    try {
      const creds = join(dir, 'nats.creds');
      writeFileSync(creds, '-----BEGIN NATS USER JWT-----\n');
      expect(() => checkClusterFiles(nats(creds))).not.toThrow();
      expect(() => checkClusterFiles(nats(undefined))).not.toThrow();
      expect(() => checkClusterFiles({ nats: undefined })).not.toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a creds file that is missing or a directory, naming CHAINPOST_NATS_CREDS and the path', () => {
    const dir = tempDir();
    try {
      for (const [path, code] of [
        [join(dir, 'missing.creds'), 'ENOENT'],
        [dir, 'EISDIR'],
      ]) {
        let caught: unknown;
        try {
          checkClusterFiles(nats(path));
        } catch (err) {
          caught = err;
        }
        expect(caught, path).toBeInstanceOf(ConfigError);
        expect((caught as ConfigError).variable).toBe('CHAINPOST_NATS_CREDS');
        expect((caught as Error).message).toBe(`CHAINPOST_NATS_CREDS: cannot read the creds file ${path} (${code})`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a cluster node's id", () => {
  it('is made at the first start and read back at the next, from the node’s data directory', async () => {
    const dir = tempDir();
    try {
      let store = openStore(dir);
      const made = nodeId(store);
      // The host's name (for the operator reading status --cluster) and a random part.
      expect(made).toMatch(/^[-A-Za-z0-9]{1,40}-[a-z0-9]{6}$/);
      expect(nodeId(store)).toBe(made);
      await store.close();
      store = openStore(dir);
      expect(nodeId(store)).toBe(made);
      await store.close();
      // Another directory, another node.
      const other = tempDir();
      const second = openStore(other);
      expect(nodeId(second)).not.toBe(made);
      await second.close();
      rmSync(other, { recursive: true, force: true });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a cluster node's id in a backup", () => {
  it('is left out of the copy `chainpost backup` makes (a node started on it makes its own), the rest of meta kept', async () => {
    const dir = tempDir();
    const target = tempDir();
    try {
      const store = openStore(dir);
      const made = nodeId(store);
      store.transact(() => store.put('meta', 'controlSeq', 41));
      await store.close();
      const copied = await cli(['backup', target], dir);
      expect(copied.code, copied.stderr).toBe(0);
      const copy = openStore(target);
      expect(copy.get('meta', 'nodeId')).toBeUndefined();
      expect(copy.get('meta', 'controlSeq')).toBe(41);
      expect(nodeId(copy)).not.toBe(made);
      await copy.close();
      // The source keeps its own.
      const source = openStore(dir);
      expect(nodeId(source)).toBe(made);
      await source.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
      rmSync(target, { recursive: true, force: true });
    }
  });
});
