import { describe, expect, it } from 'vitest';
import { capGas, executesCalls, gasOf } from '../../../../engine/rpc/gas-cap.js';

/** The gas node access lets a forwarded call burn on the node. */
describe('capGas', () => {
  const CAP = 30_000_000n;
  const to = '0x00000000000000000000000000000000000000aa';
  const override = { [to]: { code: '0x5b600056' } };

  it('applies to the methods that execute code on the node, and no other', () => {
    for (const m of ['eth_call', 'eth_estimateGas', 'eth_createAccessList', 'eth_simulateV1']) expect(executesCalls(m), m).toBe(true);
    for (const m of ['eth_getBalance', 'eth_sendRawTransaction', 'eth_getLogs', 'debug_traceCall']) expect(executesCalls(m), m).toBe(false);
  });

  it('gives a call over the cap, or without gas, the cap; keeps a gas within it as sent; keeps the other params', () => {
    for (const method of ['eth_call', 'eth_estimateGas', 'eth_createAccessList']) {
      expect(capGas(method, [{ to, gas: '0xe8d4a51000' }, 'latest', override], CAP), method).toEqual([
        { to, gas: '0x1c9c380' },
        'latest',
        override,
      ]);
      expect(capGas(method, [{ to }], CAP), method).toEqual([{ to, gas: '0x1c9c380' }]);
      expect(capGas(method, [{ to, gas: '0x5208' }, 'latest'], CAP), method).toEqual([{ to, gas: '0x5208' }, 'latest']);
    }
    // The cap itself is within it.
    expect(capGas('eth_call', [{ to, gas: '0x1c9c380' }], CAP)).toEqual([{ to, gas: '0x1c9c380' }]);
    expect(capGas('eth_call', [{ to, gas: '0x1c9c381' }], CAP)).toEqual([{ to, gas: '0x1c9c380' }]);
  });

  it('reads the gas in every form a node takes, and caps what it cannot read', () => {
    // Anvil reads a decimal string and a JSON number as gas as well as a hex quantity.
    expect(capGas('eth_call', [{ to, gas: 1e12 }], CAP)).toEqual([{ to, gas: '0x1c9c380' }]);
    expect(capGas('eth_call', [{ to, gas: '1000000000000' }], CAP)).toEqual([{ to, gas: '0x1c9c380' }]);
    expect(capGas('eth_call', [{ to, gas: '0XE8D4A51000' }], CAP)).toEqual([{ to, gas: '0x1c9c380' }]);
    expect(capGas('eth_call', [{ to, gas: 21_000 }], CAP)).toEqual([{ to, gas: 21_000 }]);
    for (const gas of [null, true, -1, 1.5, 1e300, 'lots', '0x', `0x${'f'.repeat(65)}`, {}])
      expect(capGas('eth_call', [{ to, gas }], CAP), JSON.stringify(gas)).toEqual([{ to, gas: '0x1c9c380' }]);
    expect(gasOf('0x10')).toBe(16n);
    expect(gasOf('16')).toBe(16n);
  });

  it('leaves params of another shape for the node to refuse', () => {
    expect(capGas('eth_call', [], CAP)).toEqual([]);
    expect(capGas('eth_call', ['0xnot-a-call', 'latest'], CAP)).toEqual(['0xnot-a-call', 'latest']);
    expect(capGas('eth_call', [[{ to }]], CAP)).toEqual([[{ to }]]);
    expect(capGas('eth_simulateV1', [{ blockStateCalls: 'none' }], CAP)).toEqual([{ blockStateCalls: 'none' }]);
  });

  it('shares the cap among all calls of all blocks of an eth_simulateV1', () => {
    const sim = (blockStateCalls: unknown[]) =>
      capGas('eth_simulateV1', [{ blockStateCalls, validation: false }, 'latest'], CAP) as [
        { blockStateCalls: Array<{ calls: Array<{ gas: string }> }> },
        string,
      ];
    const gases = (out: ReturnType<typeof sim>) => out[0].blockStateCalls.map((b) => b.calls.map((c) => c.gas));
    // Without gas: equal shares of the cap.
    expect(gases(sim([{ calls: [{ to }, { to }] }, { calls: [{ to }] }]))).toEqual([['0x989680', '0x989680'], ['0x989680']]);
    // Gas within what is left is kept; over it, it gets what is left; the calls without gas share the rest.
    const mixed = sim([
      { stateOverrides: override, calls: [{ to, gas: '0x5208' }, { to }] },
      {
        calls: [
          { to, gas: '0xe8d4a51000' },
          { to, gas: '0x5208' },
        ],
      },
    ]);
    expect(gases(mixed)).toEqual([
      ['0x5208', '0x0'],
      ['0x1c97178', '0x0'],
    ]);
    expect(mixed[0].blockStateCalls[0]).toMatchObject({ stateOverrides: override });
    expect(mixed[0]).toMatchObject({ validation: false });
    expect(mixed[1]).toBe('latest');
    // However many calls, their gas adds up to the cap at most.
    const many = sim(Array.from({ length: 50 }, () => ({ calls: Array.from({ length: 20 }, () => ({ to, gas: '0xe8d4a51000' })) })));
    expect(
      gases(many)
        .flat()
        .reduce((sum, g) => sum + BigInt(g), 0n),
    ).toBe(CAP);
    // A block without calls, or not an object, stays as it is.
    expect(sim([{ blockOverrides: { number: '0x10' } }, 7, { calls: [{ to }] }])[0].blockStateCalls).toEqual([
      { blockOverrides: { number: '0x10' } },
      7,
      { calls: [{ to, gas: '0x1c9c380' }] },
    ]);
  });
});
