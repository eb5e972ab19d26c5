/** What one tenant's streams may hold, and the time their triggers may take (each set by a variable, engine/config/config.ts). */
export interface StreamLimits {
  /** CHAINPOST_MAX_STREAMS: streams per tenant (EVM, Bitcoin and Solana together). */
  streams: number;
  /** CHAINPOST_MAX_ADDRESSES: addresses per stream. */
  addresses: number;
  /** CHAINPOST_MAX_TRIGGERS: triggers per EVM stream (each is an eth_call per matched item of every block). */
  triggers: number;
  /** CHAINPOST_MAX_XPUBS: extended public keys per Bitcoin stream (each watches its gap window, 2 × CHAINPOST_BITCOIN_GAP addresses at least). */
  xpubs: number;
}

export const DEFAULT_LIMITS: StreamLimits = { streams: 1_000, addresses: 1_000_000, triggers: 100, xpubs: 1_000 };

/** CHAINPOST_TRIGGER_BUDGET_MS: how long one stream's trigger calls for one block may take, ms of service time. */
export const TRIGGER_BUDGET_MS = 2_000;

/** CHAINPOST_TRIGGER_SHARE_MS: node-ms per second a tenant's trigger calls on one chain may take, on average. */
export const TRIGGER_SHARE_MS = 100;

/** CHAINPOST_TRIGGER_GAS: the gas of a trigger call (a view function such as balanceOf takes some 30,000). */
export const TRIGGER_GAS = 5_000_000;
