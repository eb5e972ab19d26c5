import { createRequire } from 'node:module';

/**
 * The official Moralis SDK as a real client of the running server. Its Auth and
 * Streams base URLs are fixed inside it, so an axios interceptor rewrites them to
 * the test server and refuses any host but 127.0.0.1. axios and moralis are both
 * loaded with require, so the interceptor lands on the one axios the SDK uses.
 *
 * Moralis is one per process and starts once, but files of the `shared` project
 * (vitest.config.ts) follow one another in a process, each with its own server: the
 * interceptor (installed once) sends to the server last named here. The EVM API's
 * base URL is left at the SDK's default, also rewritten, as the SDK keeps the first
 * one it reads; its configuration is put back to what `Moralis.start` would set
 * (apiKey and streamsSecret are read at each request; the modules' start does nothing).
 */
const require = createRequire(import.meta.url);

const FIXED_BASES = ['https://authapi.moralis.io', 'https://api.moralis-streams.com', 'https://deep-index.moralis.io'];

/** The server the SDK's fixed base URLs go to; on globalThis, as axios and Moralis outlive a test file's modules. */
const target = ((globalThis as any)[Symbol.for('chainpost.test.sdk')] ??= { serverUrl: '', installed: false }) as {
  serverUrl: string;
  installed: boolean;
};

export async function moralisFor(serverUrl: string, apiKey: string, config: Record<string, unknown> = {}): Promise<any> {
  const axios = require('axios');
  const Moralis = require('moralis').default;
  target.serverUrl = serverUrl;
  if (!target.installed) {
    target.installed = true;
    axios.interceptors.request.use((config: { url?: string; baseURL?: string; proxy?: unknown }) => {
      const rebase = (url: string | undefined): string | undefined => {
        const base = FIXED_BASES.find((b) => url?.startsWith(b));
        return base === undefined || url === undefined ? url : target.serverUrl + url.slice(base.length);
      };
      config.url = rebase(config.url);
      config.baseURL = rebase(config.baseURL);
      config.proxy = false;
      // The SDK's v3 operations (utils.endpointWeights) send a path with the base URL apart.
      const url =
        config.baseURL !== undefined && !/^[a-z]+:\/\//.test(config.url ?? '')
          ? `${config.baseURL}${config.url ?? ''}`
          : (config.url ?? '');
      const host = new URL(url).hostname;
      if (host !== '127.0.0.1') throw new Error(`test refused a request to ${host}: only loopback`);
      return config;
    });
  }
  const settings = { apiKey, ...config };
  if (!Moralis.Core.isStarted) await Moralis.start(settings);
  else {
    Moralis.Core.config.reset();
    Moralis.Core.config.merge(settings);
  }
  return Moralis;
}
