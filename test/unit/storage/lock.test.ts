import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DataDirLocked, LOCK_FILE, lockDataDir, lockHolder } from '../../../storage/lock.js';
import { tempDir } from '../../helpers.js';

describe('the data directory lock', () => {
  const dirs: string[] = [];
  const dir = (): string => {
    const d = tempDir();
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('is held once: a second taker is refused naming the holder, and it is free again once released', () => {
    const d = dir();
    const lock = lockDataDir(d);
    expect(lockHolder(d)).toBe(process.pid);
    const refused = (() => {
      try {
        lockDataDir(d);
      } catch (err) {
        return err;
      }
    })();
    expect(refused).toBeInstanceOf(DataDirLocked);
    expect((refused as DataDirLocked).message).toBe(
      `${d} is in use by another chainpost server (pid ${process.pid}); stop that one first, or set CHAINPOST_DATA to another directory`,
    );
    lock.release();
    expect(lockHolder(d)).toBeUndefined();
    lockDataDir(d).release();
  });

  it.each([
    ['a pid that is gone', '2147483646 123\n'],
    // This very pid, started at another time: the pid was reused (a restarted container's pid 1, say).
    ['a reused pid', `${process.pid} 1\n`],
    ['content it did not write', 'garbage'],
  ])('takes over a stale lock: %s', (_, content) => {
    const d = dir();
    writeFileSync(join(d, LOCK_FILE), content);
    expect(lockHolder(d)).toBeUndefined();
    const lock = lockDataDir(d);
    expect(readFileSync(join(d, LOCK_FILE), 'utf8')).toMatch(new RegExp(`^${process.pid} \\d+\\n$`));
    lock.release();
  });

  it('leaves a lock that is no longer its own in place on release', () => {
    const d = dir();
    const lock = lockDataDir(d);
    writeFileSync(join(d, LOCK_FILE), '2147483646 123\n');
    lock.release();
    expect(readFileSync(join(d, LOCK_FILE), 'utf8')).toBe('2147483646 123\n');
  });
});
