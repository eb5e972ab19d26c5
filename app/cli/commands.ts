/**
 * The commands of the `chainpost` binary, one entry each: its words, usage,
 * options and what it does. cli/main.ts parses the arguments against an
 * entry, answers --help from it and runs it; a new command is one more entry.
 */
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseDuration } from '../../engine/duration.js';
import type { ApiKeys } from '../../engine/keys.js';
import { ConfigError, type Config } from '../../engine/config/config.js';
import { ROLES, clusterRolesProblem, parseRoles, rolesProblem } from '../../engine/config/roles.js';
import type { Store } from '../../storage/env.js';
import type { Health } from './status.js';

export interface OptionSpec {
  /** The value's placeholder in the usage (`--name N`); none: a flag. */
  value?: string;
  required?: boolean;
  help: string;
  /** What is wrong with a value given (a usage error, exit 2), or undefined for a good one. */
  check?(value: string): string | undefined;
}

/** Where a run of the CLI reads and writes: the process's own (cli/main.ts PROCESS_IO), or a test's. */
export interface Io {
  /** stdout: what the command answers. */
  out(text: string): void;
  /** stderr: refusals, and the data directory a command uses. */
  err(text: string): void;
  /** The environment the configuration is read from. */
  env: Readonly<Record<string, string | undefined>>;
  /** What a relative CHAINPOST_DATA or DIR is resolved against. */
  cwd: string;
}

/** The process's own streams, environment and working directory: what bin/chainpost.js runs the CLI on. */
export const PROCESS_IO: Io = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  env: process.env,
  cwd: process.cwd(),
};

export interface Context {
  config: Config;
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
  io: Io;
  /** The store in CHAINPOST_DATA, for commands with `data: 'store'` (closed after `run`). */
  store(): Store;
}

export interface Command {
  /** The words after `chainpost`: `serve`, `keys create`. */
  name: string;
  /** The positional arguments in the usage line (`N`); none: the command takes none. */
  args?: string;
  summary: string;
  options?: Record<string, OptionSpec>;
  /** Lines after the options (configuration, what the output is). */
  notes?: string;
  /**
   * What the command does with CHAINPOST_DATA (its absolute path is printed to stderr first):
   * `server`: the server creates and locks it; `store`: it must hold a store already,
   * unless the command has a `--create` option and it is given; `exclusive`: as `store`,
   * and the command holds the directory's lock while it runs (refused while a server runs there).
   */
  data: 'server' | 'store' | 'exclusive' | 'none';
  /** Resolves with the exit code when it is not 0 (status), or with nothing. */
  run(ctx: Context): Promise<number | void> | void;
}

/** `--create`, for a command that may make the store it needs. */
const CREATE: OptionSpec = { help: 'make a new store in CHAINPOST_DATA if it holds none (by default a directory without one is refused)' };

/**
 * Runs `use` on the keys in the command's store: written through the cluster's control log on a cluster node
 * (CHAINPOST_NATS; app/cli/cluster-keys.ts), else to the store at once. What a command needs is imported when it
 * runs: --help and the other commands never load it.
 */
const withKeys = async <T>(ctx: Context, use: (keys: ApiKeys) => T | Promise<T>, { writes = true } = {}): Promise<T> => {
  const [{ ApiKeys }, { StoreControlPlane }, { lmdbKeyStore }] = await Promise.all([
    import('../../engine/keys.js'),
    import('../../engine/streams/control-plane.js'),
    import('../../storage/keys.js'),
  ]);
  const store = ctx.store();
  const keys = lmdbKeyStore(store);
  const { nats, natsReplicas: replicas, dataDir } = ctx.config;
  const cluster =
    writes && nats !== undefined
      ? await (await import('./cluster-keys.js')).clusterKeyChanges({ nats, replicas, dataDir, store, keys, err: ctx.io.err })
      : undefined;
  try {
    return await use(new ApiKeys(keys, () => Date.now(), cluster?.changes ?? new StoreControlPlane(store, keys)));
  } finally {
    await cluster?.close();
  }
};

/** `status`'s exit code when a chain's upstream node fails. */
const FAILING_UPSTREAM = 2;

/** How long a rotated key keeps working when --grace is not given. */
const DEFAULT_GRACE = '24h';

export const COMMANDS: readonly Command[] = [
  {
    name: 'serve',
    summary: 'start the server (also what `chainpost` alone does)',
    options: {
      roles: {
        value: 'R',
        help: `what this node does, of ${ROLES.join(',')} (default: all; fewer only on a cluster node, CHAINPOST_NATS)`,
        check: rolesProblem,
      },
    },
    notes: `Configuration: environment variables (docs/configuration.md), among them
  CHAINPOST_DATA   data directory, created if missing (default ./data); one server per directory
  CHAINPOST_HOST, CHAINPOST_PORT   where to listen (default 127.0.0.1:8080)
  CHAINPOST_CHAINS   upstream nodes (unset: the embedded anvil devnet as 0x539)
  CHAINPOST_NATS   the NATS servers of a cluster (unset: this process alone)
Logs are JSON lines on stdout; SIGTERM or SIGINT stops it.`,
    data: 'server',
    run: ({ config, values, io }) => serve(withRoles(config, values['roles'] as string | undefined), io),
  },
  {
    name: 'keys create',
    summary: 'create an API key; prints it alone on the last line',
    options: {
      name: { value: 'N', required: true, help: 'the key\'s name (letters, digits, "-", "_", ".")' },
      email: { value: 'E', help: 'e-mail address for stream alerts' },
      tenant: { value: 'T', help: 'join the existing tenant T (default: a new tenant named N)' },
      create: CREATE,
    },
    data: 'store',
    async run(ctx) {
      const { name, email, tenant } = ctx.values as Record<string, string | undefined>;
      const { key, record, tenant: joined } = await withKeys(ctx, (keys) => keys.create({ name: name!, email, tenant }));
      ctx.io.out(`created key "${record.name}" (id ${record.id}) in tenant "${joined.name}" (${joined.id})\n${key}\n`);
    },
  },
  {
    name: 'keys list',
    summary: 'list the keys (never the keys themselves)',
    data: 'store',
    async run(ctx) {
      const rows = (await withKeys(ctx, (keys) => keys.list(), { writes: false })).map((k) => [
        k.name,
        k.id,
        k.tenant,
        k.email ?? '',
        new Date(k.createdAt).toISOString(),
        k.expiresAt === undefined ? '' : new Date(k.expiresAt).toISOString(),
      ]);
      for (const r of [['NAME', 'ID', 'TENANT', 'EMAIL', 'CREATED', 'EXPIRES'], ...rows])
        ctx.io.out(
          `${r
            .map((c, i) => (i < 5 ? c.padEnd(i === 1 ? 14 : i === 4 ? 24 : 20) : c))
            .join(' ')
            .trimEnd()}\n`,
        );
    },
  },
  {
    name: 'keys rotate',
    args: 'N',
    summary: 'replace the key named N (or with id N) by a new one; prints it alone on the last line; the old one works for a grace period',
    options: {
      grace: {
        value: 'D',
        help: `how long the old key keeps working: a number and s, m, h or d, or 0 for not at all (default ${DEFAULT_GRACE})`,
      },
    },
    notes:
      "The new key has the old one's name, tenant and e-mail. `keys list` shows the old key with its EXPIRES\ntime until then; `keys revoke N` ends both at once.",
    data: 'store',
    async run(ctx) {
      const text = (ctx.values['grace'] as string | undefined) ?? DEFAULT_GRACE;
      const grace = parseDuration(text);
      if (grace === undefined)
        throw new Error(`keys rotate: --grace: not a duration: "${text}" (a number and s, m, h or d, such as 24h; or 0)`);
      const { key, record, old } = await withKeys(ctx, (keys) => keys.rotate(ctx.positionals[0]!, grace));
      ctx.io.out(
        `rotated key "${record.name}": new id ${record.id}; the old key (id ${old.id}) works until ${new Date(old.expiresAt!).toISOString()}\n${key}\n`,
      );
    },
  },
  {
    name: 'keys revoke',
    args: 'N',
    summary: 'revoke the key named N (with any it replaced still in their grace period) or with id N; it stops working at once',
    data: 'store',
    async run(ctx) {
      const k = await withKeys(ctx, (keys) => keys.revoke(ctx.positionals[0]!));
      ctx.io.out(`revoked key "${k.name}" (id ${k.id})\n`);
    },
  },
  {
    name: 'backup',
    args: 'DIR',
    summary: 'copy the store in CHAINPOST_DATA into the empty directory DIR, consistently, while a server may run on it',
    options: { compact: { help: 'leave out free pages (a smaller copy, made more slowly)' } },
    notes: `DIR must exist and be empty. The copy is the whole store (streams, keys, settings, queued
webhooks, history, indexes) as of one moment; start a server on it with CHAINPOST_DATA=DIR.
The embedded devnet's chain (CHAINPOST_DATA/devnet) is not part of it: a server on the copy
begins a new devnet, clearing the copy's chain 0x539 at its first start. A cluster node's
id is left out: a node started on the copy makes its own.`,
    data: 'store',
    async run(ctx) {
      const target = resolve(ctx.io.cwd, ctx.positionals[0]!);
      const { file, bytes, compact } = await (await import('../../storage/backup.js')).backupStore(ctx.store(), target, {
        compact: ctx.values['compact'] === true,
      });
      // A copy seeding another node must not carry this node's cluster id.
      const [{ openStore }, { forgetNodeId }] = await Promise.all([import('../../storage/env.js'), import('../cluster.js')]);
      const copy = openStore(target);
      try {
        forgetNodeId(copy);
      } finally {
        await copy.close();
      }
      // The copy is data.mdb alone, as LMDB's copy made it: opening it above made a lock file no process holds.
      rmSync(join(target, 'lock.mdb'), { force: true });
      ctx.io.out(`copied the store to ${file} (${bytes} bytes${compact ? ', compacted' : ''})\n`);
    },
  },
  {
    name: 'status',
    summary: "a running server's chains: one progress bar each (backfill, head, Data API indexes), from its GET /health",
    options: {
      url: { value: 'U', help: 'the server (default http://CHAINPOST_HOST:CHAINPOST_PORT, 127.0.0.1 for a server on every address)' },
      cluster: { help: 'the whole cluster instead, from CHAINPOST_NATS: nodes, leases, partitions, streams' },
      json: { help: 'with --cluster: one JSON object (nodes, leases, partitions, streams) instead of text' },
    },
    notes: `Plain text, one line per chain; exits 1 when no server answers, 2 when a chain's upstream node fails.
With --cluster: each node of the registry (roles, version, HTTP address, bus, control log applied
and lag, leases held, block consumers' lag, when it last wrote), the chains' leases with their
holder and revision, each node's delivery partitions and those unowned, the streams' messages
and bytes; exits 1 when CHAINPOST_NATS is unset or no NATS server answers.`,
    data: 'none',
    run: (ctx) => (ctx.values['cluster'] === true ? clusterStatus(ctx) : status(ctx)),
  },
  {
    name: 'devnet reset',
    summary:
      'start the embedded devnet afresh: delete its state and what was ingested from chain 0x539 (streams, keys and queued webhooks stay)',
    data: 'exclusive',
    async run(ctx) {
      // Loaded here: viem and the devnet's client cost the other commands ~0.6 s at start.
      const { devnetReset } = await import('../../http/clients/devnet-reset.js');
      for (const line of await devnetReset(ctx.store(), ctx.config.dataDir)) ctx.io.out(`${line}\n`);
    },
  },
];

/** The server's own address, as a client reaches it (a wildcard listen address means this machine). */
function serverUrl(config: Config): string {
  const host =
    config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host.includes(':') ? `[${config.host}]` : config.host;
  return `http://${host}:${config.port}`;
}

async function status(ctx: Context): Promise<number> {
  const url = (ctx.values['url'] as string | undefined)?.replace(/\/+$/, '') ?? serverUrl(ctx.config);
  let res: Response;
  try {
    // With CHAINPOST_METRICS_KEY the chains are shown only to its holder.
    const key = ctx.config.metricsKey;
    res = await fetch(`${url}/health`, {
      signal: AbortSignal.timeout(5_000),
      ...(key === undefined ? {} : { headers: { authorization: `Bearer ${key}` } }),
    });
  } catch (err) {
    const why = ((err as Error).cause as Error | undefined)?.message ?? (err as Error).message;
    throw new Error(`no server answers at ${url} (${why}); start one, or give its address with --url or CHAINPOST_HOST/CHAINPOST_PORT`);
  }
  const health = (await res.json()) as Health;
  const { failingChains, renderStatus } = await import('./status.js');
  ctx.io.out(renderStatus(url, health));
  // A server that answers but cannot read a chain is told apart from one that does not answer (1).
  return failingChains(health).length > 0 ? FAILING_UPSTREAM : 0;
}

async function clusterStatus(ctx: Context): Promise<void> {
  const { nats } = ctx.config;
  if (nats === undefined)
    throw new ConfigError('CHAINPOST_NATS', 'is not set: status --cluster reads the cluster from its NATS servers (nats://host:4222)');
  const { clusterStatus: read } = await import('./cluster-status.js');
  ctx.io.out(await read(nats, ctx.values['json'] === true));
}

/** The configuration with the roles `--roles` names; fewer than every role only on a cluster node. */
function withRoles(config: Config, text: string | undefined): Config {
  if (text === undefined) return config;
  const roles = parseRoles(text);
  if (roles.size < ROLES.length && config.nats === undefined)
    throw new Error(
      `serve --roles ${text}: a single process (CHAINPOST_NATS unset) does everything, ${ROLES.join(', ')}; set CHAINPOST_NATS for a cluster node that does less`,
    );
  const problem = clusterRolesProblem(roles);
  if (problem !== undefined) throw new Error(`serve --roles ${text}: ${problem}`);
  return { ...config, roles };
}

async function serve(config: Config, io: Io): Promise<void> {
  // Loaded only to serve: every other command would pay the whole server's import.
  const { startService } = await import('../server.js');
  // On the process's own streams the server writes its log lines its way (batched per event-loop turn).
  const service = await startService({ config, ...(io === PROCESS_IO ? {} : { out: io.out, notice: io.err }) });
  let stopping = false;
  const onSignal = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    service.log.info('stopping', { signal });
    service.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        service.log.error('stop failed', { err });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  // A bug must not leave the process half-alive: log it as JSON and exit non-zero.
  process.on('uncaughtException', (err) => {
    service.log.error('crashed', { err });
    process.exit(1);
  });
  process.on('unhandledRejection', (err) => {
    service.log.error('crashed', { err });
    process.exit(1);
  });
}
