// The boundary check of the import graph: `npm run check:boundaries` for people, test/boundaries.test.ts in
// `npm test`. The rules keep engine/ the domain (no adapters, no sockets or files), keep the shared folders free
// of any one chain family, and keep the graph free of cycles. Cycles between folders are checked by the test
// over this cruise's output (see tools/boundaries.ts), because dependency-cruiser's folder scope counts a folder
// with all its subfolders and so never sees engine's root files and a subfolder importing each other.

/** The folders every family shares: they learn about families only through what app/ passes in. */
const SHARED = [
  'engine/streams/',
  'engine/match/',
  'engine/delivery/',
  'engine/ingest/',
  'engine/chains/',
  'engine/auth/',
  'engine/net/',
  'engine/families/',
  'engine/config/',
  'engine/[^/]+$', // engine's root files
  'workers/',
  'bus/',
];
const FAMILIES = ['engine/evm/', 'engine/bitcoin/', 'engine/solana/'];
const ADAPTER_FOLDERS = ['http/', 'storage/', 'workers/', 'bus/', 'app/'];
const ADAPTER_PACKAGES = ['lmdb', 'undici', 'uWebSockets.js', 'piscina', 'ws', 'nodemailer', '@nats-io'];
// The wall clock (perf_hooks, timers) and every socket, file, process and thread module: they arrive as ports.
const IO_MODULES = ['fs', 'net', 'http', 'https', 'http2', 'tls', 'dns', 'dgram', 'child_process', 'cluster', 'worker_threads', 'perf_hooks', 'timers'];

const anyOf = (paths) => `^(${paths.join('|')})`;
const escape = (name) => name.replace(/[.]/g, '\\.');

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'engine-imports-adapter',
      comment: 'engine/ is the domain: adapters (HTTP, store, workers, NATS, CLI, the composition root) plug into it, never the reverse.',
      severity: 'error',
      from: { path: '^engine/' },
      to: { path: anyOf(ADAPTER_FOLDERS) },
    },
    {
      name: 'engine-imports-io',
      comment: 'engine/ has no files, sockets, processes, threads or wall clock: they arrive as ports.',
      severity: 'error',
      from: { path: '^engine/' },
      to: { dependencyTypes: ['core'], path: `^(node:)?(${IO_MODULES.join('|')})(/|$)` },
    },
    {
      name: 'engine-imports-adapter-package',
      comment: 'engine/ has no adapter packages (store, HTTP client and server, worker pool, WebSocket, mail, NATS).',
      severity: 'error',
      from: { path: '^engine/' },
      to: { path: `(^|/)node_modules/(${ADAPTER_PACKAGES.map(escape).join('|')})/` },
    },
    {
      name: 'bus-imports-adapter',
      comment: 'bus/ (everything that speaks NATS) is an adapter beside the others: it imports engine/, never app/ or another adapter.',
      severity: 'error',
      from: { path: '^bus/' },
      to: { path: anyOf(ADAPTER_FOLDERS.filter((folder) => folder !== 'bus/')) },
    },
    {
      name: 'shared-imports-family',
      comment: 'A shared folder never names a chain family: the registry of families is built in app/ and passed in.',
      severity: 'error',
      from: { path: anyOf(SHARED) },
      to: { path: anyOf(FAMILIES) },
    },
    {
      name: 'server-imports-test-code',
      comment: 'The server\'s build (dist/) holds no test code: the server never imports benches, tools or tests.',
      severity: 'error',
      from: { path: '^(app|bus|engine|http|storage|workers)/' },
      to: { path: '^(bench|tools|test)/' },
    },
    {
      name: 'bench-imports-test',
      comment: 'What benches share with tests lives in test/kit/; the rest of test/ is the tests\' own.',
      severity: 'error',
      from: { path: '^bench/' },
      to: { path: '^test/(?!kit/)' },
    },
    {
      name: 'kit-imports-bench-or-tests',
      comment: 'test/kit/ serves benches and tests alike: it imports neither.',
      severity: 'error',
      from: { path: '^test/kit/' },
      to: { path: '^(bench/|test/(?!kit/))' },
    },
    {
      name: 'test-imports-bench',
      comment: 'Tests import nothing from bench/: what they share with the benches is in test/kit/.',
      severity: 'error',
      from: { path: '^test/' },
      to: { path: '^bench/' },
    },
    {
      name: 'file-cycle',
      comment: 'No cycle between files.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'An import the check cannot resolve is an import the check cannot judge.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    parser: 'swc',
    // Type-only imports count: a type import is a dependency of the design even if it vanishes from the build.
    tsPreCompilationDeps: true,
    // No tsConfig: TypeScript 7 has no JavaScript API for dependency-cruiser to read it with, and nothing here
    // needs it (no path aliases; './x.js' resolves to './x.ts' without it).
    // Dynamic import() counts like a static one (swc reports it as 'dynamic-import', judged by every rule).
    moduleSystems: ['es6', 'cjs'],
    doNotFollow: { path: 'node_modules' },
    // node_modules is not followed but stays in the graph, so the adapter-package rule can see it.
    exclude: { path: '^dist(-bench)?/' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
  },
};
