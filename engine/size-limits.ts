/**
 * The documented sizes of a request, in one place: the code that applies them, test/size-limits.test.ts that
 * proves each at its limit and one past it, and docs/api.md's Limits table all read these numbers.
 */

/** JSON bodies up to 1 MiB; larger ones are answered 413 naming `body` and this limit. */
export const MAX_BODY_BYTES = 1 << 20;

/**
 * A request's head (request line, headers and the blank line after them) that uWebSockets.js always takes: its
 * parser buffers a head that arrives in more than one read in 4 KiB and closes the connection, with no HTTP
 * answer, once that is full. A longer head that happens to arrive in one read may pass, which no client
 * controls. Fixed in the uWS build (no variable); chainpost cannot see a head before uWS has parsed it.
 */
export const MAX_HEAD_BYTES = 4096;

/** Header fields uWebSockets.js takes in one request (fixed in its build); one more closes the connection, no answer. */
export const MAX_HEADERS = 48;

/**
 * The most characters of each text field of POST /challenge/request/{evm,solana,aptos} (each of `resources`: one
 * resource); one more is answered 400 naming the field and the limit. A domain is at most a DNS name's 253.
 */
export const CHALLENGE_TEXT = { domain: 253, uri: 2_048, resource: 2_048, statement: 1_000 } as const;

/**
 * `message` of POST /challenge/verify/{evm,solana,aptos}, /bind/request/verify and /bind/remove/verify, in
 * characters. A challenge request whose message would be longer is refused, naming `resources`: it could never be verified.
 */
export const SIGNED_MESSAGE_CHARS = 16_384;

/**
 * The most items of each array one request may carry; one more is answered 400 naming the field, with
 * `details.limit` (JSON-RPC batches: a -32600 error object whose message names the limit).
 */
export const BATCH = {
  /** `address` of POST and DELETE /streams/{evm,bitcoin,solana}/:id/address, and a Solana stream's key lists. */
  streamAddresses: 10_000,
  /** `addresses` of POST /bind/request. */
  bindAddresses: 20,
  /** `verifications` of POST /bind/request/verify. */
  bindVerifications: 20,
  /** `resources` of POST /challenge/request/{evm,solana,aptos}. */
  challengeResources: 64,
  /** Calls in one JSON-RPC batch of node access: a batch is one HTTP request, and one token of the key's rate. */
  rpcCalls: 100,
  /** `tokens` of POST /api/v2.2/erc20/prices. */
  tokenPrices: 100,
  /** `tokens` of POST /api/v2.2/nft/getMultipleNFTs. */
  multipleNfts: 25,
  /** `addresses` of POST /api/v2.2/nft/metadata. */
  nftContracts: 25,
  /** `addresses` of GET /erc20/metadata, `token_addresses` of GET /:address/erc20 and /wallets/:address/tokens, `contract_addresses` of GET /:address/erc20/transfers. */
  erc20Addresses: 10,
  /** `token_addresses` of GET /:address/nft, `contract_addresses` of GET /:address/nft/transfers. */
  nftAddresses: 100,
  /** `wallet_addresses` of GET /wallets/balances. */
  walletAddresses: 25,
  /** `webhooks` of POST /admin/streams/:id/webhooks (test clock only). */
  adminWebhooks: 20_000,
} as const;
