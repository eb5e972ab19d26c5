import { hash } from 'node:crypto';

/**
 * SHA-256 twice: block and transaction ids, merkle nodes. node:crypto's one-shot hash: a block's
 * thousands of small inputs cost several times less than through @noble/hashes.
 */
export const sha256d = (bytes: Uint8Array): Uint8Array => hash('sha256', hash('sha256', bytes, 'buffer'), 'buffer');
