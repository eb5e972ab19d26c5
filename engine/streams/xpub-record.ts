// Bitcoin streams' xpubs as the control plane writes them (engine/streams/control-plane.ts): the record and its keys.

/** An extended public key on a stream, as stored in `streamXpubs` under `streamId/xpubId` (times in ms). */
export interface StoredXpub {
  id: string;
  streamId: string;
  xpub: string;
  createdAt: number;
  updatedAt: number;
}

/** `xpubKeys`: a key's id on its stream, under `streamId/xpub`. */
export const xpubKey = (streamId: string, xpub: string): string => `${streamId}/${xpub}`;
/** `xpubKeys`: how many keys the stream holds, under `streamId/` (no key is empty). */
export const xpubCountKey = (streamId: string): string => `${streamId}/`;
