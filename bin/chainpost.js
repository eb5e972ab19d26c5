#!/usr/bin/env node
// The `chainpost` binary: runs the compiled service (npm run build makes dist/) on this process's streams.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = new URL('../dist/app/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(main))) {
  process.stderr.write('chainpost: dist/ is missing; run `npm run build` first\n');
  process.exit(1);
}
const { run } = await import(main.href);
// 0: the command is done (a server runs on), and the process ends when nothing is left to do.
const code = await run(process.argv.slice(2));
if (code !== 0) process.exit(code);
