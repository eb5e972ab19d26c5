/**
 * The `chainpost` binary (bin/chainpost.js): finds the command in COMMANDS,
 * answers -h/--help (anywhere in the arguments) with its usage without running
 * anything, parses its options, settles its data directory and runs it.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { Store } from '../../storage/env.js';
import type { DataDirLock } from '../../storage/lock.js';
import { COMMANDS, PROCESS_IO, type Command, type Context, type Io } from './commands.js';

export { PROCESS_IO, type Io } from './commands.js';

/** Bad arguments: exit 2 with the usage of `usage` (a command, a group such as `keys`, or all). */
class UsageError extends Error {
  constructor(
    message: string,
    readonly usage: string,
  ) {
    super(message);
  }
}

const HELP = new Set(['-h', '--help']);

/** The groups of commands (`keys`): the first word of the commands that have two. */
const groupOf = (c: Command): string | undefined => (c.name.includes(' ') ? c.name.split(' ')[0] : undefined);

/** What the arguments name: a command and its own arguments, or the usage to print (for --help, help, or an error). */
type Found = { command: Command; rest: string[] } | { usage: string; error?: string };

function find(argv: readonly string[]): Found {
  const [first, second] = argv;
  if (first === undefined) return { command: COMMANDS.find((c) => c.name === 'serve')!, rest: [] };
  if (first === 'help') {
    const words = argv
      .slice(1)
      .filter((a) => !HELP.has(a))
      .join(' ');
    const usage = usageOf(words);
    return usage === undefined ? { usage: topUsage(), error: `no command "${words}"` } : { usage };
  }
  if (first.startsWith('-')) return HELP.has(first) ? { usage: topUsage() } : { usage: topUsage(), error: `unknown option "${first}"` };
  const single = COMMANDS.find((c) => c.name === first);
  if (single !== undefined) return { command: single, rest: argv.slice(1) };
  if (!COMMANDS.some((c) => groupOf(c) === first)) return { usage: topUsage(), error: `unknown command "${first}"` };
  const sub = COMMANDS.find((c) => c.name === `${first} ${second}`);
  if (sub !== undefined) return { command: sub, rest: argv.slice(2) };
  if (second === undefined || HELP.has(second) || argv.some((a) => HELP.has(a))) {
    return { usage: groupUsage(first), ...(second === undefined ? { error: `${first} needs a command` } : {}) };
  }
  return { usage: groupUsage(first), error: `unknown ${first} command "${second}"` };
}

/**
 * Runs `chainpost argv…` on `io` and resolves with its exit code: 0; 1 for a refusal or a failure, said on `io.err`;
 * 2 for bad arguments (with the usage), or what the command answers (`status`). `serve` resolves once the server
 * listens, which then runs on until the process's SIGTERM or SIGINT. bin/chainpost.js runs it on PROCESS_IO and exits
 * with a code other than 0; a test runs it on its own `io`, in its process.
 */
export async function run(argv: string[], io: Io = PROCESS_IO): Promise<number> {
  try {
    const found = find(argv);
    if ('usage' in found) {
      if (found.error !== undefined) throw new UsageError(found.error, found.usage);
      io.out(found.usage);
      return 0;
    }
    const { command, rest } = found;
    // --help anywhere (before a `--`) wins over everything else, so nothing starts.
    const end = rest.indexOf('--');
    if ((end === -1 ? rest : rest.slice(0, end)).some((a) => HELP.has(a))) {
      io.out(commandUsage(command));
      return 0;
    }
    return await runCommand(command, rest, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`chainpost: ${err.message}\n${err.usage}`);
      return 2;
    }
    io.err(`chainpost: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

async function runCommand(command: Command, args: string[], io: Io): Promise<number> {
  const { values, positionals } = parse(command, args);
  // Loaded behind the command, and the store's code behind a valid configuration: --help and a usage error answer
  // without either, a refused configuration without the store's.
  const { parseConfig } = await import('../../engine/config/config.js');
  const parsed = parseConfig(io.env);
  const data = command.data === 'store' || command.data === 'exclusive' ? await import('./data.js') : undefined;
  // Resolved once here, so every message and log line names the same absolute directory (and creds file).
  const nats = parsed.nats && { ...parsed.nats, creds: parsed.nats.creds && resolve(io.cwd, parsed.nats.creds) };
  const config = { ...parsed, dataDir: resolve(io.cwd, parsed.dataDir), nats };
  if (command.data !== 'none') io.err(`chainpost: data directory ${config.dataDir}\n`);
  let store: Store | undefined;
  const ctx: Context = {
    config,
    values,
    positionals,
    io,
    store: () => {
      if (data === undefined) throw new Error(`${command.name} reads no store`);
      return (store ??= data.openExisting(config.dataDir, command, values['create'] === true));
    },
  };
  let lock: DataDirLock | undefined;
  try {
    // The store first: a directory without one is refused before the lock would create it.
    if (command.data === 'exclusive') lock = data!.holdExclusive(ctx.store(), config.dataDir, io.err);
    return (await command.run(ctx)) ?? 0;
  } finally {
    await store?.close();
    lock?.release();
  }
}

/** The command's options and positionals, or a UsageError with its usage (never a raw parseArgs error). */
function parse(command: Command, args: string[]): Pick<Context, 'values' | 'positionals'> {
  const specs = Object.entries(command.options ?? {});
  const usage = commandUsage(command);
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args,
      options: Object.fromEntries(specs.map(([name, o]) => [name, { type: o.value === undefined ? 'boolean' : 'string' }] as const)),
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    // Node's messages run on with advice for its own API: their first sentence is the problem.
    const problem = (err as Error).message.split('. ')[0]!.replace(/\.$/, '');
    throw new UsageError(`${command.name}: ${problem[0]!.toLowerCase()}${problem.slice(1)}`, usage);
  }
  const expected = command.args?.split(' ').length ?? 0;
  if (parsed.positionals.length > expected)
    throw new UsageError(`${command.name}: unexpected argument "${parsed.positionals[expected]}"`, usage);
  if (parsed.positionals.length < expected) throw new UsageError(`${command.name} needs ${command.args}`, usage);
  for (const [name, o] of specs) {
    const value = parsed.values[name];
    if (o.required && value === undefined) throw new UsageError(`${command.name} needs --${name} ${o.value}`, usage);
    const problem = typeof value === 'string' ? o.check?.(value) : undefined;
    if (problem !== undefined) throw new UsageError(`${command.name}: --${name}: ${problem}`, usage);
  }
  return { values: parsed.values as Context['values'], positionals: parsed.positionals };
}

function synopsis(c: Command): string {
  const options = Object.entries(c.options ?? {}).map(([name, o]) => {
    const word = o.value === undefined ? `--${name}` : `--${name} ${o.value}`;
    return o.required ? word : `[${word}]`;
  });
  return ['chainpost', c.name, ...options, ...(c.args === undefined ? [] : [c.args])].join(' ');
}

const table = (rows: Array<[string, string]>): string => {
  const width = Math.max(...rows.map(([left]) => left.length)) + 3;
  return rows.map(([left, right]) => `  ${left.padEnd(width)}${right}\n`).join('');
};

function commandUsage(c: Command): string {
  const options: Array<[string, string]> = Object.entries(c.options ?? {}).map(([name, o]) => [
    o.value === undefined ? `--${name}` : `--${name} ${o.value}`,
    o.help,
  ]);
  options.push(['-h, --help', 'show this usage']);
  return `usage: ${synopsis(c)}\n\n${c.summary}\n\noptions:\n${table(options)}${c.notes === undefined ? '' : `\n${c.notes}\n`}`;
}

function groupUsage(group: string): string {
  const members = COMMANDS.filter((c) => groupOf(c) === group);
  return `usage: chainpost ${group} <command> [options]\n\ncommands:\n${table(members.map((c) => [c.name, c.summary]))}\n\`chainpost ${group} <command> --help\` shows a command's options.\n`;
}

function topUsage(): string {
  return `usage: chainpost [<command>] [options]\n\ncommands:\n${table([...COMMANDS.map((c): [string, string] => [c.name, c.summary]), ['help [<command>]', 'this list, or the usage of a command']])}
\`chainpost <command> --help\` shows a command's options. Commands that use a data directory
(CHAINPOST_DATA, default ./data) print its absolute path to stderr first.
`;
}

/** The usage of a command or a group named by its words, if there is one. */
function usageOf(words: string): string | undefined {
  if (words === '') return topUsage();
  const command = COMMANDS.find((c) => c.name === words);
  if (command !== undefined) return commandUsage(command);
  return COMMANDS.some((c) => groupOf(c) === words) ? groupUsage(words) : undefined;
}
