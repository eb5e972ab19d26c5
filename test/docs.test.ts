import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The README and docs/ as a reader follows them: every relative link leads to a file (and a heading) that exists,
 * and docs/configuration.md documents exactly the CHAINPOST_* variables the server reads.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SOURCE_DIRS = ['engine', 'http', 'storage', 'workers', 'app'];

const walk = (dir: string, keep: (file: string) => boolean): string[] =>
  existsSync(dir)
    ? readdirSync(dir, { recursive: true, encoding: 'utf8' })
        .map((f) => join(dir, f))
        .filter(keep)
    : [];

const DOCS = [join(ROOT, 'README.md'), ...walk(join(ROOT, 'docs'), (f) => f.endsWith('.md'))];

/** A Markdown text without its fenced code blocks and inline code: a link or heading inside them is not one. */
const prose = (md: string): string => md.replace(/^(```|~~~)[^\n]*\n[\s\S]*?\n\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
const anchors = (md: string): Set<string> => {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [, text] of prose(md.replace(/`([^`\n]*)`/g, '$1')).matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const slug = text!
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
};

/** Every relative link of a Markdown file: [text](target) and [text]: target, without the web's. */
const links = (md: string): string[] =>
  [...prose(md).matchAll(/\]\(([^)\s]+)(?: "[^"]*")?\)|^\[[^\]]+\]: *(\S+)/gm)]
    .map((m) => (m[1] ?? m[2])!)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));

describe('README.md and docs/', () => {
  it('are there to check: the README and the docs pages', () => {
    expect(DOCS.map((f) => relative(ROOT, f))).toEqual(
      expect.arrayContaining(['README.md', 'docs/api.md', 'docs/configuration.md', 'docs/operations.md']),
    );
  });

  it('link only to files and headings that exist', () => {
    const broken: string[] = [];
    for (const file of DOCS) {
      const md = readFileSync(file, 'utf8');
      for (const link of links(md)) {
        const [path, anchor] = link.split('#') as [string, string | undefined];
        const target = path === '' ? file : join(dirname(file), decodeURIComponent(path));
        const where = `${relative(ROOT, file)}: ${link}`;
        if (!existsSync(target)) broken.push(`${where} (no such file)`);
        else if (
          anchor !== undefined &&
          statSync(target).isFile() &&
          target.endsWith('.md') &&
          !anchors(readFileSync(target, 'utf8')).has(anchor)
        ) {
          broken.push(`${where} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('point nowhere outside the repository', () => {
    const outside = DOCS.flatMap((file) =>
      links(readFileSync(file, 'utf8'))
        .filter((link) => relative(ROOT, join(dirname(file), link.split('#')[0]!)).startsWith('..'))
        .map((link) => `${relative(ROOT, file)}: ${link}`),
    );
    expect(outside).toEqual([]);
  });
});

describe('docs/configuration.md', () => {
  // A variable the server reads appears in its code as a string literal: get('CHAINPOST_PORT').
  const read = new Set(
    SOURCE_DIRS.flatMap((dir) => walk(join(ROOT, dir), (f) => f.endsWith('.ts'))).flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/['"`](CHAINPOST_[A-Z0-9_]+)['"`]/g)].map((m) => m[1]!),
    ),
  );
  const configuration = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8');
  const documented = new Set([...configuration.matchAll(/^\| \[?`(CHAINPOST_[A-Z0-9_]+)`/gm)].map((m) => m[1]!));

  it('has a row for every CHAINPOST_* variable the server reads', () => {
    expect(read.size).toBeGreaterThan(40);
    expect([...read].filter((v) => !documented.has(v)).sort()).toEqual([]);
  });

  it('documents no variable the server does not read', () => {
    expect([...documented].filter((v) => !read.has(v)).sort()).toEqual([]);
  });

  it('has the same variables as chainpost.env.example', () => {
    const example = readFileSync(join(ROOT, 'chainpost.env.example'), 'utf8');
    const listed = new Set([...example.matchAll(/^#?(CHAINPOST_[A-Z0-9_]+)=/gm)].map((m) => m[1]!));
    expect([...listed].sort()).toEqual([...documented].sort());
  });
});
