import { readFileSync } from 'node:fs';

/** chainpost's version (package.json, beside dist/ where the server runs from). */
export function chainpostVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}
