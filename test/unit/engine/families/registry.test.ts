import { describe, expect, it } from 'vitest';
import { FAMILIES } from '../../../../app/families.js';
import { CHAIN_FAMILIES } from '../../../../app/family-list.js';
import { bitcoin } from '../../../../engine/bitcoin/index.js';
import { evm } from '../../../../engine/evm/index.js';
import type { BeginParts, FamilyWorker, PrepareParts } from '../../../../engine/families/family.js';
import { Families, bind } from '../../../../engine/families/registry.js';
import { WorkerFamilies } from '../../../../engine/families/worker-registry.js';
import { workerPart } from '../../../../app/family-tasks.js';
import { solana } from '../../../../engine/solana/index.js';

describe('the registry of families', () => {
  it("refuses two families whose worker tasks share a name: the pool runs a family's task by its name alone", () => {
    const twin = { ...solana, name: 'twin', tasks: { ingest: evm.tasks.ingest } } as never;
    expect(() => new Families({ evm, bitcoin, twin })).toThrow('two families have a worker task named ingest');
  });

  it('refuses a family with a replay but no block request, or the reverse, and two ports onto the pool by one name', () => {
    expect(() => new Families({ half: { ...solana, name: 'half', tasks: {}, replay: undefined } as never })).toThrow(
      'the half family has a block request but no replay',
    );
    expect(
      () => new Families({ half: { ...solana, name: 'half', tasks: {}, api: { ...solana.api, blockRequest: undefined } } as never }),
    ).toThrow('the half family has a replay but no block request');
    const run = () => Promise.resolve(undefined as never);
    expect(() => FAMILIES.pools(run, ['match'])).not.toThrow();
    expect(() => FAMILIES.pools(run, ['bitcoin'])).toThrow('two ports onto the worker pool are named bitcoin');
  });

  it("finds each family's worker task by name, and names the one no family has", () => {
    expect(FAMILIES.task('solana')).toBe(solana.tasks.solana);
    expect(FAMILIES.task('xpubWindow')).toBe(bitcoin.tasks.xpubWindow);
    expect(() => FAMILIES.task('aptos')).toThrow('no family has a worker task named aptos');
  });

  it("hands each family's prepare the adapters bound to it, and each later hook that family's state", () => {
    const made: unknown[] = [];
    const one = {
      ...solana,
      name: 'one',
      tasks: {},
      prepare: (_p: PrepareParts, adapters: { socket: string }) => ({ socket: adapters.socket }),
      follow: (_p: unknown, state: unknown) => void made.push(state),
    } as never;
    const two = {
      ...solana,
      name: 'two',
      tasks: {},
      prepare: (_p: PrepareParts, adapters: { socket: string }) => ({ socket: adapters.socket }),
      follow: (_p: unknown, state: unknown) => void made.push(state),
    } as never;
    const families = new Families({ one: bind(one, { socket: 'a' } as never), two: bind(two, { socket: 'b' } as never) });
    const states = families.prepare({} as PrepareParts);
    families.follow({} as never, states);
    expect(made).toEqual([{ socket: 'a' }, { socket: 'b' }]);
  });

  it('refuses to prepare a family that takes adapters none were bound to, naming it, and a worker needs none bound', () => {
    expect(() => new Families({ evm, bitcoin, solana }).prepare({ config: {} } as PrepareParts)).toThrow(
      "the evm family's adapters are not bound (bind it in app/families.ts)",
    );
    expect('adapters' in CHAIN_FAMILIES.evm).toBe(false);
    expect(new Families(CHAIN_FAMILIES).task('ingest')).toBe(evm.tasks.ingest);
  });

  it("gives a worker, by each listed family's name, that family's own match step and tasks: the very ones of its full object", async () => {
    const parts: FamilyWorker[] = [];
    for (const full of FAMILIES.list) {
      const part = await workerPart(full.name);
      expect(part.matching, full.name).toBe(full.matching);
      expect(part.tasks, full.name).toBe(full.tasks);
      parts.push(part);
    }
    await expect(workerPart('aptos')).rejects.toThrow();
    const families = new WorkerFamilies(parts);
    expect(families.task('xpubWindow')).toBe(bitcoin.tasks.xpubWindow);
    expect(families.matching('solana')).toBe(solana.matching);
    expect(families.matching('aptos')).toBeUndefined();
    expect(() => families.task('aptos')).toThrow('no family has a worker task named aptos');
  });

  it('gives a stream the keys of the family that derives any for it, and none when no family does', () => {
    const of = (id: string) => (id === 'btc' ? Uint8Array.of(1, 2) : new Uint8Array(0));
    const derives = { ...solana, name: 'derives', tasks: {}, prepare: () => ({ derived: of }) } as never;
    const plain = { ...solana, name: 'plain', tasks: {}, prepare: () => ({ derived: () => new Uint8Array(0) }) } as never;
    const families = new Families({ plain, derives });
    const derivedOf = families.derivedOf(families.prepare({} as PrepareParts));
    expect([...derivedOf('btc')]).toEqual([1, 2]);
    expect(derivedOf('sol')).toHaveLength(0);
    expect(new Families({ evm: { ...evm, prepare: undefined } as never }).derivedOf({} as never)('btc')).toHaveLength(0);
  });

  it('stops what earlier families began, in their order, when a later one cannot begin', async () => {
    const events: string[] = [];
    const beginning = (name: string, fails = false) =>
      ({
        ...solana,
        name,
        tasks: {},
        begin: async () => {
          events.push(`begin ${name}`);
          if (fails) throw new Error(`${name} could not start`);
          return { stop: async () => void events.push(`stop ${name}`) };
        },
      }) as never;
    const families = new Families({ a: beginning('a'), b: beginning('b'), c: beginning('c', true) });
    await expect(families.begin({} as BeginParts, {} as never)).rejects.toThrow('c could not start');
    expect(events).toEqual(['begin a', 'begin b', 'begin c', 'stop a', 'stop b']);
  });
});
