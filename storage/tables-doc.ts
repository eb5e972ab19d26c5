import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { TableDeclaration } from '../engine/data-api/common/tables.js';
import { DATA_API_TABLE_GROUPS } from '../engine/data-api/tables.js';

/**
 * storage/README.md's tables of the Data API's indexes are written from the declarations beside each index
 * (engine/data-api/tables.ts gathers them): each between `<!-- data-api tables: group -->` and
 * `<!-- end data-api tables -->`. `npm run docs:tables` rewrites them; test/unit/storage/tables-doc.test.ts checks they agree.
 */

const README = fileURLToPath(new URL('../../storage/README.md', import.meta.url));
const END = '<!-- end data-api tables -->';
type Group = keyof typeof DATA_API_TABLE_GROUPS;

/** One group's tables as Markdown: a row per key form of each table. */
export function tablesMarkdown(group: Group): string {
  const rows = Object.entries<TableDeclaration>(DATA_API_TABLE_GROUPS[group]).flatMap(([name, t]) =>
    t.rows.map((r) => `| \`${name}\` | ${r.key} | ${r.value} |`),
  );
  return ['| database | key | value |', '|---|---|---|', ...rows].join('\n');
}

/** `readme` with every group's block written from the declarations; throws when a group has no block. */
export function withDataApiTables(readme: string): string {
  let out = readme;
  for (const group of Object.keys(DATA_API_TABLE_GROUPS) as Group[]) {
    const begin = `<!-- data-api tables: ${group} -->`;
    const at = out.indexOf(begin);
    const end = out.indexOf(END, at);
    if (at < 0 || end < 0) throw new Error(`storage/README.md has no block for the ${group} tables (${begin} … ${END})`);
    out = `${out.slice(0, at + begin.length)}\n${tablesMarkdown(group)}\n${out.slice(end)}`;
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) writeFileSync(README, withDataApiTables(readFileSync(README, 'utf8')));
