// The boundary check of the import graph, shared by test/boundaries.test.ts (in `npm test`) and
// `npm run check:boundaries` (for people). The rules live in .dependency-cruiser.cjs; this module runs them,
// adds what dependency-cruiser does not check the way we mean it (cycles between folders, the engine's file
// size limit) and prints the result.
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseResult, type IModule } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';

/** What the check reads: the server's code, its benches and tools, and the tests with their kit (stand-ins, fixture loaders). */
export const SOURCE_FOLDERS = ['app', 'bus', 'engine', 'http', 'storage', 'workers', 'tools', 'bench', 'test'];
export const ENGINE_MAX_LINES = 600;

export interface RuleViolation {
  rule: string;
  from: string;
  to: string;
  cycle: string[];
}
export interface FileImport {
  from: string;
  to: string;
}
/** Folders (a file's folder is its directory; engine's root files make the folder `engine`) that import each other. */
export interface FolderCycle {
  folders: string[];
  links: { from: string; to: string; imports: FileImport[] }[];
}
export interface LongFile {
  file: string;
  lines: number;
}
export interface BoundaryReport {
  violations: RuleViolation[];
  folderCycles: FolderCycle[];
  longFiles: LongFile[];
}

/** The repository's root: the nearest folder above this module with a package.json (source or dist/). */
export function repositoryRoot(from = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

export async function checkBoundaries(root = repositoryRoot()): Promise<BoundaryReport> {
  const options = await extractDepcruiseOptions(join(root, '.dependency-cruiser.cjs'));
  const targets = SOURCE_FOLDERS.filter((folder) => existsSync(join(root, folder)));
  const { output } = await cruise(targets, { ...options, baseDir: root });
  if (typeof output === 'string') throw new Error('dependency-cruiser answered text where a cruise result was asked for');
  return {
    violations: ruleViolations(output),
    folderCycles: folderCycles(output.modules),
    longFiles: longEngineFiles(root),
  };
}

function ruleViolations(result: ICruiseResult): RuleViolation[] {
  return (result.summary.violations ?? []).map((violation) => ({
    rule: violation.rule.name,
    from: violation.from,
    to: packageName(violation.to),
    cycle: (violation.cycle ?? []).map((step) => step.name),
  }));
}

/** A package by its name, wherever node_modules lies (a worktree's may be a link to another checkout's). */
const packageName = (path: string) => path.replace(/^.*\bnode_modules\/((@[^/]+\/)?[^/]+)\/.*$/, 'node_modules/$1');

const isLocal = (module: IModule) => !module.coreModule && !module.couldNotResolve && !/(^|\/)node_modules\//.test(module.source);

/** Strongly connected groups of folders (Tarjan), each with the file imports that hold it together. */
export function folderCycles(modules: IModule[]): FolderCycle[] {
  const edges = new Map<string, Map<string, FileImport[]>>();
  const local = new Set(modules.filter(isLocal).map((module) => module.source));
  for (const module of modules) {
    if (!local.has(module.source)) continue;
    const from = posix.dirname(module.source);
    for (const dependency of module.dependencies) {
      if (!local.has(dependency.resolved)) continue;
      const to = posix.dirname(dependency.resolved);
      if (to === from) continue;
      const targets = edges.get(from) ?? edges.set(from, new Map()).get(from)!;
      const imports = targets.get(to) ?? targets.set(to, []).get(to)!;
      imports.push({ from: module.source, to: dependency.resolved });
    }
  }
  const index = new Map<string, number>();
  const lowLink = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: FolderCycle[] = [];
  const visit = (folder: string): void => {
    index.set(folder, index.size);
    lowLink.set(folder, index.get(folder)!);
    stack.push(folder);
    onStack.add(folder);
    for (const next of edges.get(folder)?.keys() ?? []) {
      if (!index.has(next)) {
        visit(next);
        lowLink.set(folder, Math.min(lowLink.get(folder)!, lowLink.get(next)!));
      } else if (onStack.has(next)) {
        lowLink.set(folder, Math.min(lowLink.get(folder)!, index.get(next)!));
      }
    }
    if (lowLink.get(folder) !== index.get(folder)) return;
    const group: string[] = [];
    for (let member = stack.pop()!; ; member = stack.pop()!) {
      onStack.delete(member);
      group.push(member);
      if (member === folder) break;
    }
    if (group.length < 2) return;
    const members = new Set(group.sort());
    const links = group.flatMap((from) =>
      [...(edges.get(from) ?? [])]
        .filter(([to]) => members.has(to))
        .map(([to, imports]) => ({ from, to, imports: imports.sort(byFromThenTo) })),
    );
    cycles.push({ folders: group, links: links.sort(byFromThenTo) });
  };
  for (const folder of [...edges.keys()].sort()) if (!index.has(folder)) visit(folder);
  return cycles.sort((a, b) => a.folders[0]!.localeCompare(b.folders[0]!));
}

const byFromThenTo = (a: { from: string; to: string }, b: { from: string; to: string }) =>
  a.from.localeCompare(b.from) || a.to.localeCompare(b.to);

export function longEngineFiles(root: string, limit = ENGINE_MAX_LINES): LongFile[] {
  const files = readdirSync(join(root, 'engine'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => posix.join('engine', file.split('\\').join('/')));
  return files
    .map((file) => ({ file, lines: lineCount(readFileSync(join(root, file), 'utf8')) }))
    .filter(({ lines }) => lines > limit)
    .sort((a, b) => b.lines - a.lines);
}

const lineCount = (text: string) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);

/** One line per finding, grouped by rule; empty when the graph keeps every rule. */
export function formatReport(report: BoundaryReport): string {
  const sections: string[] = [];
  const byRule = new Map<string, RuleViolation[]>();
  for (const violation of report.violations)
    (byRule.get(violation.rule) ?? byRule.set(violation.rule, []).get(violation.rule)!).push(violation);
  for (const [rule, violations] of [...byRule].sort(([a], [b]) => a.localeCompare(b))) {
    const lines = violations.map((v) => (v.cycle.length > 0 ? `${v.from} → ${v.cycle.join(' → ')}` : `${v.from} → ${v.to}`)).sort();
    sections.push(`${rule} (${violations.length}):\n${lines.map((line) => `  ${line}`).join('\n')}`);
  }
  if (report.folderCycles.length > 0) {
    // Each link with its imports, the thinnest links (the likeliest to cut) first.
    const lines = report.folderCycles.map(
      (cycle) =>
        `  ${cycle.folders.join(' ⇄ ')}\n${[...cycle.links]
          .sort((a, b) => a.imports.length - b.imports.length || byFromThenTo(a, b))
          .map(
            ({ from, to, imports }) => `    ${from} → ${to} (${imports.length}): ${shortList(imports.map((i) => `${i.from} → ${i.to}`))}`,
          )
          .join('\n')}`,
    );
    sections.push(`folder-cycle (${report.folderCycles.length}):\n${lines.join('\n')}`);
  }
  if (report.longFiles.length > 0) {
    sections.push(
      `engine-file-over-${ENGINE_MAX_LINES}-lines (${report.longFiles.length}):\n${report.longFiles.map(({ file, lines }) => `  ${file}: ${lines} lines`).join('\n')}`,
    );
  }
  return sections.join('\n\n');
}

const shortList = (items: string[], shown = 3) =>
  items.slice(0, shown).join(', ') + (items.length > shown ? `, and ${items.length - shown} more` : '');

const findings = (report: BoundaryReport) => report.violations.length + report.folderCycles.length + report.longFiles.length;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const report = await checkBoundaries();
  const count = findings(report);
  console.log(count === 0 ? 'boundaries: the import graph keeps every rule' : `${formatReport(report)}\n\nboundaries: ${count} findings`);
  process.exitCode = count === 0 ? 0 : 1;
}
