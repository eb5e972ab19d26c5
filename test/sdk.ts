import { createRequire } from 'node:module';

/**
 * The official Moralis SDK as a real client of the running server. Its Auth and
 * Streams base URLs are fixed inside it, so an axios interceptor rewrites them to
 * the test server and refuses any host but 127.0.0.1. axios and moralis are both
 * loaded with require, so the interceptor lands on the one axios the SDK uses.
 */
const require = createRequire(import.meta.url);

const FIXED_BASES = ['https://authapi.moralis.io', 'https://api.moralis-streams.com'];

export async function moralisFor(serverUrl: string, apiKey: string, config: Record<string, unknown> = {}): Promise<any> {
  const axios = require('axios');
  const Moralis = require('moralis').default;
  axios.interceptors.request.use((config: { url?: string; baseURL?: string; proxy?: unknown }) => {
    for (const base of FIXED_BASES) if (config.url?.startsWith(base)) config.url = serverUrl + config.url.slice(base.length);
    config.proxy = false;
    // The SDK's v3 operations (utils.endpointWeights) send a path with the base URL apart.
    const url =
      config.baseURL !== undefined && !/^[a-z]+:\/\//.test(config.url ?? '') ? `${config.baseURL}${config.url ?? ''}` : (config.url ?? '');
    const host = new URL(url).hostname;
    if (host !== '127.0.0.1') throw new Error(`test refused a request to ${host}: only loopback`);
    return config;
  });
  if (!Moralis.Core.isStarted) await Moralis.start({ apiKey, evmApiBaseUrl: `${serverUrl}/api/v2.2`, ...config });
  return Moralis;
}
