import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { KeySet, buildKeySet, writeKeyLanes } from '../../../../engine/match/key-set.js';
import { PartedKeySet, eachHit } from '../../../../engine/match/layered.js';
import { sharedBlooms, sharedWords } from '../../../../engine/match/shared-words.js';

describe('sharedWords', () => {
  it('behavior: a filter smaller than the caches is a SharedArrayBuffer of its own size', () => {
    const w = sharedWords(1_000);
    expect(w.length).toBe(1_000);
    expect(w.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(w.buffer.byteLength).toBe(4_000);
  });

  it('behavior: a larger one starts a WebAssembly memory of whole pages, shared and zeroed', () => {
    const w = sharedWords(300_000);
    expect(w.length).toBe(300_000);
    expect(w.byteOffset).toBe(0);
    expect(w.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(w.buffer.byteLength % 65_536).toBe(0);
    expect(w.buffer.byteLength).toBeLessThan(300_000 * 4 + 65_536);
    expect(w.every((x) => x === 0)).toBe(true);
  });
  it('behavior: where the address space is limited (ulimit -v) and no WebAssembly memory can be had, a SharedArrayBuffer', () => {
    // The built module (npm test builds dist/ first), in a process whose address space a WebAssembly memory's
    // reservation would overrun.
    const script = `import { sharedWords } from '${new URL('../../../../dist/engine/match/shared-words.js', import.meta.url).href}';
      let wasm = 'yes';
      try { new WebAssembly.Memory({ initial: 16, maximum: 16, shared: true }); } catch { wasm = 'no'; }
      const w = sharedWords(300_000);
      w[299_999] = 5;
      console.log(wasm, w.length, w.buffer.byteLength, w[299_999]);`;
    const out = execFileSync('bash', ['-c', 'ulimit -v 6000000 && exec "$0" --input-type=module -e "$1"', process.execPath, script], {
      encoding: 'utf8',
    });
    const [wasm, length, bytes, last] = out.trim().split(' ');
    expect([length, last]).toEqual(['300000', '5']);
    // Node 20's V8 reserves some 10 GiB a memory, so none here: the fallback's own size. A V8 that reserves less
    // gets its memory, in whole pages.
    expect(Number(bytes)).toBe(wasm === 'no' ? 1_200_000 : 1_245_184);
  });
});

describe('sharedBlooms', () => {
  it('behavior: copies filters in order into one buffer, each starting where the one before it ends', () => {
    const blooms = [8, 262_144, 64].map((n) => Uint32Array.from({ length: n }, (_, i) => (i * 2654435761 + n) >>> 0));
    const copies = sharedBlooms(blooms);
    const bytes = (w: Uint32Array): Buffer => Buffer.from(w.buffer, w.byteOffset, w.byteLength);
    copies.forEach((c, i) => expect(bytes(c).equals(bytes(blooms[i]!))).toBe(true));
    expect(new Set(copies.map((c) => c.buffer)).size).toBe(1);
    expect(copies.map((c) => c.byteOffset)).toEqual([0, 32, 32 + 262_144 * 4]);
  });

  it('behavior: posted to another thread in one message, the copies arrive as views of one shared buffer still', () => {
    const copies = sharedBlooms([new Uint32Array(262_144).fill(7), new Uint32Array(8).fill(9)]);
    const { port1, port2 } = new MessageChannel();
    port1.postMessage({ base: copies.map((bloom, i) => ({ stored: `p${i}`, bloom })) });
    const got = (receiveMessageOnPort(port2)!.message as { base: Array<{ bloom: Uint32Array }> }).base.map((p) => p.bloom);
    port1.close();
    expect(got[0]!.buffer).toBe(got[1]!.buffer);
    got[1]![0] = 11;
    expect(copies[1]![0]).toBe(11);
  });

  it('behavior: a set in parts whose filters are in separate buffers is refused by the column pass, by name', () => {
    const part = (): KeySet => new KeySet(buildKeySet(20, [{ key: randomBytes(20), streams: [0] }]));
    const set = new PartedKeySet([part(), part()]);
    const column = new DataView(new ArrayBuffer(28));
    writeKeyLanes(column, 0, 20, column, 20);
    expect(() => eachHit(set, column, 0, 1, 20, () => undefined)).toThrow(/one buffer \(sharedBlooms\)/);
  });
});
