import { describe, expect, it } from 'vitest';
import { FAMILIES } from '../../app/families.js';
import { bitcoin } from '../../engine/bitcoin/index.js';
import { evm } from '../../engine/evm/index.js';
import { Families } from '../../engine/families/registry.js';
import { solana } from '../../engine/solana/index.js';

describe('the registry of families', () => {
  it("refuses two families whose worker tasks share a name: the pool runs a family's task by its name alone", () => {
    const twin = { ...solana, name: 'twin', tasks: { ingest: evm.tasks.ingest } } as never;
    expect(() => new Families({ evm, bitcoin, twin })).toThrow('two families have a worker task named ingest');
  });

  it("finds each family's worker task by name, and names the one no family has", () => {
    expect(FAMILIES.task('solana')).toBe(solana.tasks.solana);
    expect(FAMILIES.task('xpubWindow')).toBe(bitcoin.tasks.xpubWindow);
    expect(() => FAMILIES.task('aptos')).toThrow('no family has a worker task named aptos');
  });
});
