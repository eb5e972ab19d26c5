/**
 * What a node does (`chainpost serve --roles api,ingest,match,deliver`): serve the API, follow the chains, match
 * blocks against the streams, send the webhooks. A single process takes every role; a cluster node may take fewer.
 */
export const ROLES = ['api', 'ingest', 'match', 'deliver'] as const;

export type Role = (typeof ROLES)[number];

/** Every role: a single process's, and a cluster node's unless `--roles` names fewer. */
export const ALL_ROLES: ReadonlySet<Role> = new Set(ROLES);

const names = (text: string): string[] => text.split(',').map((n) => n.trim());

const isRole = (name: string): name is Role => (ROLES as readonly string[]).includes(name);

/** What is wrong with a `--roles` list (an unknown role, an empty one), or undefined when every name is a role. */
export function rolesProblem(text: string): string | undefined {
  const bad = names(text).find((n) => !isRole(n));
  if (bad === undefined) return undefined;
  const expected = `the roles are ${ROLES.join(', ')}`;
  return bad === '' ? `expected roles separated by commas (${expected}), got "${text}"` : `unknown role "${bad}" (${expected})`;
}

/** The roles a `--roles` list names (one rolesProblem accepted; a role named twice counts once). */
export const parseRoles = (text: string): ReadonlySet<Role> => new Set(names(text).filter(isRole));

/**
 * What is wrong with a cluster node's set of roles in this version, or undefined: only an empty one. A node sends the
 * webhooks of the delivery partitions it owns (one with `match` and `deliver`), and matches blocks for them, whichever
 * node follows the chain; a replay or block replay asked on any node goes to its partition's owner, and the Bitcoin
 * mempool's webhooks, read by the chain's follower, are staged by their partitions' owners: no role needs another
 * on its node (docs/decisions/cluster.md, Part 2).
 */
export function clusterRolesProblem(roles: ReadonlySet<Role>): string | undefined {
  return roles.size === 0 ? 'a node needs one role at least' : undefined;
}
