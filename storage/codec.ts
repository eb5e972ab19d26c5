import { Decoder, Encoder } from '@msgpack/msgpack';

/** Every stored value is msgpack. One shared encoder/decoder avoids per-call allocation. */
const encoder = new Encoder({ ignoreUndefined: true });
const decoder = new Decoder();

export const pack = (value: unknown): Uint8Array => encoder.encode(value);
export const unpack = <T>(bytes: Uint8Array): T => decoder.decode(bytes) as T;
