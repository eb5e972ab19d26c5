#!/usr/bin/env node
// The `chainpost` binary: runs the compiled service (npm run build makes dist/).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = new URL('../dist/app/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(main))) {
  process.stderr.write('chainpost: dist/ is missing; run `npm run build` first\n');
  process.exit(1);
}
const { run } = await import(main.href);
await run(process.argv.slice(2));
