import { linkSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StorageError, ensureDataDir } from './env.js';

/**
 * One server per data directory: a lock file holding the server's pid and its
 * process start time. It dies with the process: a lock whose process is gone
 * (killed with -9, say), or whose pid now belongs to another process (the
 * start time differs: pid reuse, pid 1 of a restarted container), is stale
 * and taken over. The key commands of the CLI take no lock (LMDB is
 * multi-process).
 */
export const LOCK_FILE = 'server.lock';

export class DataDirLocked extends StorageError {
  override name = 'DataDirLocked';
  constructor(
    readonly dir: string,
    readonly pid: number,
  ) {
    super(`${dir} is in use by another chainpost server (pid ${pid}); stop that one first, or set CHAINPOST_DATA to another directory`);
  }
}

export interface DataDirLock {
  readonly path: string;
  /** Removes the lock file if it is still this process's (idempotent). */
  release(): void;
}

/** Who holds a lock file: its pid and the process's start time (undefined where /proc is missing). */
interface Holder {
  pid: number;
  started: string | undefined;
  /** The lock file's content as read. */
  text: string;
}

/** Takes the data directory's lock (creating the directory), or throws DataDirLocked naming the live holder. */
export function lockDataDir(dir: string): DataDirLock {
  ensureDataDir(dir);
  const path = join(dir, LOCK_FILE);
  const text = `${process.pid} ${procStat(process.pid)?.started ?? '-'}\n`;
  // Written whole beside the lock, then linked in: a reader never sees a half-written lock file.
  const draft = `${path}.${process.pid}`;
  writeFileSync(draft, text);
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        linkSync(draft, path);
        return ownLock(path, text);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
          throw new StorageError(`cannot take the lock ${path}: ${(err as Error).message}`);
      }
      const holder = readHolder(path);
      if (holder === undefined) continue; // released meanwhile
      if (alive(holder)) throw new DataDirLocked(dir, holder.pid);
      // Stale: moved aside (atomic), then checked: when what was moved is not the stale lock read above but one
      // another starter took meanwhile, it is put back, and the next attempt finds it live.
      const aside = `${path}.stale.${process.pid}`;
      try {
        renameSync(path, aside);
      } catch {
        continue; // another starter moved it first
      }
      if (readHolder(aside)?.text !== holder.text) {
        try {
          linkSync(aside, path);
        } catch {
          // a third took the lock meanwhile: the next attempt sees it
        }
      }
      unlinkSync(aside);
    }
    throw new StorageError(`cannot take the lock ${path}: it keeps changing hands`);
  } finally {
    unlinkSync(draft);
  }
}

/** The pid of the live server holding the data directory's lock, if any. */
export function lockHolder(dir: string): number | undefined {
  const holder = readHolder(join(dir, LOCK_FILE));
  return holder !== undefined && alive(holder) ? holder.pid : undefined;
}

function ownLock(path: string, text: string): DataDirLock {
  let held = true;
  const release = (): void => {
    if (!held) return;
    held = false;
    process.off('exit', release);
    try {
      if (readFileSync(path, 'utf8') === text) unlinkSync(path);
    } catch {
      // gone already
    }
  };
  // process.exit() on a crash still removes it (a kill -9 cannot; the next start finds it stale).
  process.on('exit', release);
  return { path, release };
}

function readHolder(path: string): Holder | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  const [pid, started] = text.trim().split(' ');
  // Unreadable content (not written by this code): pid 0, never alive, so stale.
  return { pid: /^\d+$/.test(pid ?? '') ? Number(pid) : 0, started: started === '-' ? undefined : started, text };
}

function alive(holder: Holder): boolean {
  if (holder.pid <= 0) return false;
  try {
    process.kill(holder.pid, 0);
  } catch (err) {
    // EPERM: it exists, under another user.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const stat = procStat(holder.pid);
  if (stat === undefined) return true; // no /proc: the pid alone decides
  // A zombie (killed, not yet reaped by its parent) holds nothing any more.
  return stat.state !== 'Z' && stat.state !== 'X' && (holder.started === undefined || stat.started === holder.started);
}

/** A process's state and start time in clock ticks since boot (Linux /proc), so a reused pid is told apart. */
function procStat(pid: number): { state: string; started: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces), from field 3 (state) on; starttime is field 22.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0]!, started: fields[19]! };
  } catch {
    return undefined;
  }
}
