import { getAddress, isAddress } from 'viem/utils';
import { isDateTime } from '../datetime.js';

/**
 * Sign-in messages: EIP-4361 (SIWE) for EVM, the same layout with the Aptos
 * account word and `Chain ID` for Aptos, and the Sign In With Solana layout
 * (statement and fields optional) with a `Network:` line for Solana. One
 * layout, one parser; each chain family is a small set of options.
 */
export type Family = 'evm' | 'solana' | 'aptos';

export interface MessageFields {
  /** Optional `scheme://` before the domain (EIP-4361). */
  scheme?: string;
  domain: string;
  address: string;
  statement?: string;
  uri?: string;
  version?: string;
  /** The value of the chain line: `Chain ID: 1` (EVM, Aptos) or `Network: mainnet` (Solana). */
  chain?: string;
  nonce?: string;
  issuedAt?: string;
  expirationTime?: string;
  notBefore?: string;
  requestId?: string;
  resources?: string[];
}

interface Layout {
  account: string;
  chainLabel: string;
  /** EIP-4361 keeps an empty line where an absent statement would be; SIWS drops it. */
  emptyStatementLine: boolean;
  /** Fields every message of this family carries (EIP-4361: uri … issuedAt). */
  required: ReadonlyArray<keyof MessageFields>;
  /** Statements may span lines (SIWS reference parser) or not (EIP-4361). */
  multilineStatement: boolean;
}

const EIP4361_REQUIRED = ['uri', 'version', 'chain', 'nonce', 'issuedAt'] as const;

const LAYOUTS: Record<Family, Layout> = {
  evm: { account: 'Ethereum', chainLabel: 'Chain ID', emptyStatementLine: true, required: EIP4361_REQUIRED, multilineStatement: false },
  aptos: { account: 'Aptos', chainLabel: 'Chain ID', emptyStatementLine: true, required: EIP4361_REQUIRED, multilineStatement: false },
  solana: { account: 'Solana', chainLabel: 'Network', emptyStatementLine: false, required: [], multilineStatement: true },
};

export class MessageError extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
    this.name = 'MessageError';
  }
}

// RFC 3986 pieces, enough to tell an authority and a URI from anything else.
const UNRESERVED = 'A-Za-z0-9\\-._~';
const SUB_DELIMS = "!$&'()*+,;=";
const PCT = '%[0-9A-Fa-f]{2}';
const USERINFO = `(?:[${UNRESERVED}${SUB_DELIMS}:]|${PCT})*`;
const REG_NAME = `(?:[${UNRESERVED}${SUB_DELIMS}]|${PCT})*`;
const IP_LITERAL = '\\[[0-9A-Fa-f:.]+\\]|\\[v[0-9A-Fa-f]+\\.[' + UNRESERVED + SUB_DELIMS + ':]+\\]';
const AUTHORITY = `(?:${USERINFO}@)?(?:${IP_LITERAL}|${REG_NAME})(?::[0-9]*)?`;
const PCHAR = `(?:[${UNRESERVED}${SUB_DELIMS}:@]|${PCT})`;
const URI_RE = new RegExp(
  `^[A-Za-z][A-Za-z0-9+.\\-]*:(?://${AUTHORITY}(?:/${PCHAR}*)*|/?(?:${PCHAR}+(?:/${PCHAR}*)*)?)(?:\\?(?:${PCHAR}|[/?])*)?(?:#(?:${PCHAR}|[/?])*)?$`,
);
const AUTHORITY_RE = new RegExp(`^${AUTHORITY}$`);

/** RFC 4501 / RFC 3986 authority: `[userinfo@]host[:port]`, non-empty host. */
export const isAuthority = (v: string): boolean => v.length > 0 && AUTHORITY_RE.test(v) && !/^(?:.*@)?(?::|$)/.test(v);

/** RFC 3986 URI (scheme required). */
export const isUri = (v: string): boolean => URI_RE.test(v) && !/\s/.test(v);

/** EIP-4361 statement characters: reserved / unreserved / space; never a newline. */
export const isStatement = (v: string): boolean => /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;= ]*$/.test(v);

const isNonce = (v: string): boolean => /^[A-Za-z0-9]{8,}$/.test(v);

const FIELD_LINES: ReadonlyArray<[keyof MessageFields, string]> = [
  ['uri', 'URI'],
  ['version', 'Version'],
  ['chain', ''], // label from the layout
  ['nonce', 'Nonce'],
  ['issuedAt', 'Issued At'],
  ['expirationTime', 'Expiration Time'],
  ['notBefore', 'Not Before'],
  ['requestId', 'Request ID'],
];

const label = (layout: Layout, key: keyof MessageFields, fallback: string): string => (key === 'chain' ? layout.chainLabel : fallback);

/** Builds the message text; throws MessageError naming the first bad field. */
export function formatMessage(family: Family, f: MessageFields): string {
  validate(family, f);
  const layout = LAYOUTS[family];
  const head = `${f.scheme === undefined ? '' : `${f.scheme}://`}${f.domain} wants you to sign in with your ${layout.account} account:\n${f.address}`;
  const lines: string[] = [];
  for (const [key, name] of FIELD_LINES) {
    const v = f[key];
    if (v !== undefined) lines.push(`${label(layout, key, name)}: ${v as string}`);
  }
  if (f.resources !== undefined) lines.push('Resources:', ...f.resources.map((r) => `- ${r}`));
  const fields = lines.join('\n');
  if (layout.emptyStatementLine) return `${head}\n\n${f.statement === undefined ? '' : `${f.statement}\n`}\n${fields}`;
  return `${head}${f.statement === undefined ? '' : `\n\n${f.statement}`}${fields === '' ? '' : `\n\n${fields}`}`;
}

const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function messageRegex(layout: Layout): RegExp {
  const field = (key: keyof MessageFields, name: string): string => {
    const group = `\\n${esc(label(layout, key, name))}: (?<${key}>[^\\n]*)`;
    return layout.required.includes(key) ? group : `(?:${group})?`;
  };
  const fields = `${FIELD_LINES.map(([k, n]) => field(k, n)).join('')}(?:\\nResources:(?<resources>(?:\\n- [^\\n]*)*))?`;
  const head = `^(?:(?<scheme>[A-Za-z][A-Za-z0-9+.\\-]*)://)?(?<domain>[^\\n]*?) wants you to sign in with your ${layout.account} account:\\n(?<address>[^\\n]*)`;
  if (layout.emptyStatementLine) {
    // EIP-4361: address LF LF [statement LF] LF "URI: " — the first field's own LF closes the block.
    return new RegExp(`${head}\\n\\n(?:(?<statement>[^\\n]+)\\n)?${fields}$`);
  }
  // SIWS (as the reference parser): an optional statement block, then the fields, each block after a blank line.
  const statement = layout.multilineStatement ? '[\\s\\S]*?' : '[^\\n]*?';
  return new RegExp(`${head}(?:\\n|$)(?:\\n(?<statement>${statement})(?:\\n|$))??${fields}$`);
}

const REGEX: Record<Family, RegExp> = {
  evm: messageRegex(LAYOUTS.evm),
  aptos: messageRegex(LAYOUTS.aptos),
  solana: messageRegex(LAYOUTS.solana),
};

/** Parses a message of `family` strictly; throws MessageError naming what is wrong. */
export function parseMessage(family: Family, text: string): MessageFields {
  const m = REGEX[family].exec(text);
  if (m === null || m.groups === undefined)
    throw new MessageError('message', `not a ${LAYOUTS[family].account} sign-in message (lines missing, extra or out of order)`);
  const g = m.groups;
  const out: MessageFields = { domain: g['domain']!, address: g['address']! };
  const keys: Array<keyof MessageFields> = [
    'scheme',
    'statement',
    'uri',
    'version',
    'chain',
    'nonce',
    'issuedAt',
    'expirationTime',
    'notBefore',
    'requestId',
  ];
  for (const k of keys) if (g[k] !== undefined) (out as unknown as Record<string, string>)[k] = g[k]!;
  if (g['resources'] !== undefined) out.resources = g['resources'].split('\n- ').slice(1);
  validate(family, out);
  return out;
}

/** The rules of a family's fields. EVM and Aptos are checked fully; Solana as the SIWS reference does. */
function validate(family: Family, f: MessageFields): void {
  const layout = LAYOUTS[family];
  for (const key of ['domain', 'address', ...layout.required] as const) {
    if (typeof f[key] !== 'string' || f[key] === '') throw new MessageError(key === 'chain' ? 'chainId' : key, 'is required');
  }
  if (family === 'solana') return;
  if (!isAuthority(f.domain)) throw new MessageError('domain', 'not an RFC 3986 authority');
  if (family === 'evm') {
    if (!isAddress(f.address, { strict: false }) || getAddress(f.address) !== f.address)
      throw new MessageError('address', 'not an EIP-55 checksummed address');
  } else if (!/^0x[0-9a-f]{64}$/.test(f.address)) {
    throw new MessageError('address', 'not an Aptos address (0x and 64 lower-case hex digits)');
  }
  if (f.statement !== undefined && !isStatement(f.statement))
    throw new MessageError('statement', 'only EIP-4361 characters, no line break');
  if (!isUri(f.uri!)) throw new MessageError('uri', 'not an RFC 3986 URI');
  if (f.version !== '1') throw new MessageError('version', 'must be 1');
  if (!/^[0-9]+$/.test(f.chain!)) throw new MessageError('chainId', 'not a chain id');
  if (!isNonce(f.nonce!)) throw new MessageError('nonce', 'at least 8 alphanumeric characters');
  for (const k of ['issuedAt', 'expirationTime', 'notBefore'] as const) {
    const v = f[k];
    if (v !== undefined && !isDateTime(v)) throw new MessageError(k, 'not an RFC 3339 date-time');
  }
  for (const r of f.resources ?? []) if (!isUri(r)) throw new MessageError('resources', `not an RFC 3986 URI: "${r}"`);
}
