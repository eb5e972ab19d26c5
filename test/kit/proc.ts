// Shared by the tests and the benches, hence test/kit/ (see its README): the benches import nothing else from test/.
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Where every child's output is also written, when set (the test run sets it, then scans the
 * files for the secrets the children were given: test/secret-scan.ts).
 */
export const CHILD_LOGS = 'CHAINPOST_CHILD_LOGS';

/** Polls `probe` every `every` ms until it holds or `ms` run out; says whether it held. */
export async function until(probe: () => boolean | Promise<boolean>, ms: number, every = 50): Promise<boolean> {
  const deadline = performance.now() + ms;
  for (;;) {
    if (await probe()) return true;
    if (performance.now() > deadline) return false;
    await sleep(every);
  }
}

/** Where the test worker names the file running in it (test/running-file.ts): each kept log is marked with it. */
export const RUNNING_FILE = Symbol.for('chainpost.runningFile');

/**
 * The path, without extension, of a new kept log under CHAINPOST_CHILD_LOGS named `name`, with the CHAINPOST_
 * variables of `env` beside it (the secret scan's) and the test file that started it (test/failure-logs.ts prints
 * a failed file's); undefined when logs are not kept.
 */
export function keptLogBase(name: string, env: Record<string, string | undefined>): string | undefined {
  const dir = process.env[CHILD_LOGS];
  if (dir === undefined || dir === '') return undefined;
  const base = join(dir, `${process.pid}-${name}`);
  const given = Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('CHAINPOST_') && k !== CHILD_LOGS));
  writeFileSync(`${base}.env.json`, JSON.stringify(given));
  const file = (globalThis as { [RUNNING_FILE]?: string })[RUNNING_FILE];
  if (file !== undefined) writeFileSync(`${base}.file`, file);
  return base;
}

/** Keeps a copy of what `child` prints, and of the CHAINPOST_ variables it was given, under CHAINPOST_CHILD_LOGS. */
function keepChildLog(child: ChildProcess, env: Record<string, string | undefined>): void {
  const base = child.pid === undefined ? undefined : keptLogBase(String(child.pid), env);
  if (base === undefined) return;
  const keep = (c: Buffer): void => appendFileSync(`${base}.log`, c);
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
}

/** A server started and listening, in this process or a child one (test/in-process.ts). */
export interface Listening {
  port: number;
  /** Everything printed so far, stdout and stderr. */
  output: () => string;
  /** What was printed on stdout alone. */
  stdout: () => string;
  /** Resolves with the exit code once the process is gone (a server in the test process: 0 once stop() closed it). */
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** A child server process and the JSON `listening` log line it printed. */
export interface Started extends Listening {
  child: ChildProcess;
}

/** The server's `{"msg":"listening","port":N}` log line. */
const LISTENING = /"msg":"listening".*?"port":(\d+)/;

/**
 * Spawns `node args…` and waits for the line `ready` matches, its first group the port (by default
 * the server's listening line; the stand-in Bitcoin Core prints `{"url":…}` instead), or its death.
 */
export function startProcess(
  args: string[],
  env: Record<string, string | undefined>,
  timeoutMs = 25_000,
  ready: RegExp = LISTENING,
): Promise<Started> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  keepChildLog(child, env);
  let out = '';
  let stdout = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no listening line within ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    const onData = (chunk: Buffer): void => {
      out += chunk.toString();
      stdout += chunk.toString();
      const m = ready.exec(out);
      if (m === null) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        stdout += c.toString();
      });
      resolve({
        child,
        port: Number(m[1]),
        output: () => out,
        stdout: () => stdout,
        exited,
        stop: (signal = 'SIGTERM') => {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          return exited;
        },
      });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (c: Buffer) => void (out += c.toString()));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening:\n${out}`));
    });
  });
}

/** CPU time (user + system, all threads) a live process has used so far, ms; NaN where /proc cannot say. */
export function cpuMs(pid: number | undefined): number {
  try {
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th, in clock ticks (100 per s on Linux).
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

/**
 * CPU time (user + system, ms) each thread of a live process has used so far, by thread id, with its name
 * (/proc/PID/task/TID/comm: Node's main thread and worker threads are "node", libuv's pool "libuv-worker", V8's
 * helpers "V8 DefaultWorke"); empty where /proc cannot say.
 */
export function threadCpuMs(pid: number | undefined): Map<string, { name: string; ms: number }> {
  const out = new Map<string, { name: string; ms: number }>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'latin1').trim();
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'latin1');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(tid, { name, ms: (Number(fields[11]) + Number(fields[12])) * 10 });
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** Bytes a live process has caused to be written to storage so far (/proc/PID/io write_bytes); NaN where /proc cannot say. */
export function bytesWritten(pid: number | undefined): number {
  try {
    const m = /^write_bytes: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'latin1'));
    return m === null ? NaN : Number(m[1]);
  } catch {
    return NaN;
  }
}
