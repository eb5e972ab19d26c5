import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChainpost, stopAndClean, type Running } from './helpers.js';

/**
 * GET /dashboard's files as the server serves them (the page in a browser: test/system/dashboard.test.ts): every
 * link of the page and every module it imports, transitively, answered from this server; nothing inline for the CSP
 * to refuse; nothing else served under /dashboard/.
 */
describe('GET /dashboard', () => {
  let s: Running;
  beforeAll(async () => {
    s = await startChainpost();
  });
  afterAll(() => stopAndClean(s));

  it('serves the page under a CSP of its own origin, with no inline script or style', async () => {
    const page = await fetch(`${s.url}/dashboard`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(/^default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:;/);
    expect(csp).not.toContain('unsafe');
    const html = await page.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|<style|\bstyle=|\bon[a-z]+=/i);
  });

  it('serves every file the page links and every module it imports, all from this server', async () => {
    const html = await (await fetch(`${s.url}/dashboard`)).text();
    const links = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!).filter((l) => !l.startsWith('data:'));
    expect(links).toEqual(['dashboard.css', 'dashboard/app.js']);
    const seen = new Map<string, string>();
    const queue = links.map((l) => new URL(l, `${s.url}/dashboard`).href);
    while (queue.length > 0) {
      const url = queue.shift()!;
      if (seen.has(url)) continue;
      const res = await fetch(url);
      expect(res.status, url).toBe(200);
      const text = await res.text();
      seen.set(url, text);
      if (!url.endsWith('.js')) {
        expect(res.headers.get('content-type'), url).toBe('text/css; charset=utf-8');
        continue;
      }
      expect(res.headers.get('content-type'), url).toBe('text/javascript; charset=utf-8');
      // Relative imports alone: no bare specifier (no import map), no other origin.
      for (const m of text.matchAll(/(?:^|[;\n}])\s*(?:import|export)\b[^'"`;]*?from\s*['"]([^'"]+)['"]/g)) {
        expect(m[1], `${url} imports ${m[1]}`).toMatch(/^\.\/[a-z-]+\.js$/);
        queue.push(new URL(m[1]!, url).href);
      }
    }
    const modules = [...seen.keys()].map((u) => new URL(u).pathname).sort();
    expect(modules).toEqual(
      ['api', 'app', 'chains', 'deliveries', 'keys', 'preact', 'streams', 'ui']
        .map((m) => `/dashboard/${m}.js`)
        .concat('/dashboard.css')
        .sort(),
    );
    // The page's own modules set no markup from data (htm's standalone Preact names the prop, the page never uses it).
    for (const [url, text] of seen)
      if (!url.endsWith('/preact.js')) expect(text, url).not.toMatch(/innerHTML|dangerouslySetInnerHTML|insertAdjacentHTML|eval\(/);
  });

  it('serves nothing else under /dashboard/', async () => {
    for (const name of ['package.json', '__proto__', 'tsconfig.json', 'app.ts', '.tsbuildinfo', 'index.html', 'style.css']) {
      const r = await s.call(`/dashboard/${encodeURIComponent(name)}`);
      expect(r.status, name).toBe(404);
    }
  });
});
