/**
 * An EVM probe column (engine/evm/probe.ts, version 1: no hash lanes) holding one address, its ref tx 0's sender: what
 * the matcher tests of the watched set probe. Written by hand, as a block with one address would give it.
 */
export function probeOf(address: string): Uint8Array {
  const out = Buffer.alloc(9 + 24);
  out.writeUInt8(1, 0);
  out.writeUInt32LE(1, 1);
  out.writeUInt32LE(0, 5);
  out.write(address.slice(2), 9, 20, 'hex');
  out.writeUInt32LE(0, 29);
  return out;
}
