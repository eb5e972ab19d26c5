import { decodeEventLog, encodeAbiParameters, encodeEventTopics, parseAbiItem, type AbiEvent, type Hex } from 'viem';
import { describe, expect, it } from 'vitest';
import { checkFilter, compileFilter, type FilterExpr } from '../../../../engine/evm/advanced-filter.js';

const ev = (sig: string): AbiEvent => parseAbiItem(`event ${sig}`) as AbiEvent;
const TRANSFER = ev('Transfer(address indexed from, address indexed to, uint256 value)');
const MIXED = ev(
  'Mixed(int256 delta, bool flag, string label, uint8 small, bytes32 id, (uint256 x, address owner) pos, string indexed tag)',
);

const A = '0x283af0b28c62c092c9727f1ee09c02ca627eb7f5';
const A_CHECKSUM = '0x283Af0B28c62C092C9727F1Ee09c02CA627EB7F5';
const B = '0x00000000000000000000000000000000000000bb';
const E18 = 10n ** 18n;

const run = (expr: FilterExpr, args: Record<string, unknown>, inputs = TRANSFER.inputs): boolean => compileFilter(expr, inputs)(args);
/** Each filter of the table against the same args: [filter, whether it matches]. */
const expectTable = (args: Record<string, unknown>, cases: ReadonlyArray<[FilterExpr, boolean]>, inputs = TRANSFER.inputs): void => {
  for (const [expr, matches] of cases) expect(run(expr, args, inputs), JSON.stringify(expr)).toBe(matches);
};

describe('compileFilter: comparisons by type', () => {
  it('uint256 compares as big integers, written as strings or numbers', () => {
    expectTable({ from: A, to: B, value: E18 + 1n }, [
      [{ eq: ['value', '1000000000000000001'] }, true],
      [{ eq: ['value', '1000000000000000000'] }, false],
      [{ ne: ['value', '1000000000000000000'] }, true],
      [{ ne: ['value', '1000000000000000001'] }, false],
      [{ gt: ['value', '1000000000000000000'] }, true],
      [{ gt: ['value', '1000000000000000001'] }, false],
      [{ gte: ['value', '1000000000000000001'] }, true],
      [{ gte: ['value', '1000000000000000002'] }, false],
      [{ lt: ['value', '1000000000000000002'] }, true],
      [{ lt: ['value', '1000000000000000001'] }, false],
      [{ lte: ['value', '1000000000000000001'] }, true],
      [{ lte: ['value', '1000000000000000000'] }, false],
    ]);
    // The docs' own example writes 1e21 as a JSON number; it is exact as a double.
    expect(run({ gte: ['value', 1000000000000000000000] }, { value: 10n ** 21n })).toBe(true);
    expect(run({ gte: ['value', 1000000000000000000000] }, { value: 10n ** 21n - 1n })).toBe(false);
    expect(run({ eq: ['value', '0xde0b6b3a7640000'] }, { value: E18 })).toBe(true);
    // Past 2^256 - 1 nothing is lost: the top value compares exactly.
    const max = 2n ** 256n - 1n;
    expect(run({ eq: ['value', max.toString()] }, { value: max })).toBe(true);
    expect(run({ lt: ['value', max.toString()] }, { value: max - 1n })).toBe(true);
  });

  it('small uints decoded by viem as numbers compare with bigint values', () => {
    expect(run({ eq: ['small', '7'] }, { small: 7 }, MIXED.inputs)).toBe(true);
    expect(run({ gt: ['small', 6] }, { small: 7 }, MIXED.inputs)).toBe(true);
    expect(run({ in: ['small', [1, '7']] }, { small: 7 }, MIXED.inputs)).toBe(true);
    expect(run({ in: ['small', [1, 2]] }, { small: 7 }, MIXED.inputs)).toBe(false);
  });

  it('int256 compares signed', () => {
    expectTable(
      { delta: -5n },
      [
        [{ eq: ['delta', '-5'] }, true],
        [{ eq: ['delta', -5] }, true],
        [{ ne: ['delta', '5'] }, true],
        [{ lt: ['delta', '0'] }, true],
        [{ lt: ['delta', '-5'] }, false],
        [{ lte: ['delta', '-5'] }, true],
        [{ gt: ['delta', '-6'] }, true],
        [{ gt: ['delta', '-5'] }, false],
        [{ gte: ['delta', '-5'] }, true],
        [{ gte: ['delta', '-4'] }, false],
        [{ in: ['delta', ['-5', '5']] }, true],
        [{ nin: ['delta', ['-5', '5']] }, false],
      ],
      MIXED.inputs,
    );
  });

  it('addresses compare case-insensitively on both sides', () => {
    const args = { from: A_CHECKSUM, to: B, value: 1n };
    expect(run({ eq: ['from', A] }, args)).toBe(true);
    expect(run({ eq: ['from', A.toUpperCase().replace('0X', '0x')] }, args)).toBe(true);
    expect(run({ eq: ['from', A_CHECKSUM] }, { ...args, from: A })).toBe(true);
    expect(run({ eq: ['from', B] }, args)).toBe(false);
    expect(run({ ne: ['from', B] }, args)).toBe(true);
    expect(run({ ne: ['from', A] }, args)).toBe(false);
    expect(run({ in: ['to', [A_CHECKSUM, '0x00000000000000000000000000000000000000BB']] }, args)).toBe(true);
    expect(run({ in: ['to', [A]] }, args)).toBe(false);
    expect(run({ nin: ['to', [A]] }, args)).toBe(true);
    expect(run({ nin: ['to', [B.toUpperCase().replace('0X', '0x')]] }, args)).toBe(false);
  });

  it('bool accepts true/false and "true"/"false"', () => {
    expect(run({ eq: ['flag', true] }, { flag: true }, MIXED.inputs)).toBe(true);
    expect(run({ eq: ['flag', 'true'] }, { flag: true }, MIXED.inputs)).toBe(true);
    expect(run({ eq: ['flag', 'false'] }, { flag: true }, MIXED.inputs)).toBe(false);
    expect(run({ ne: ['flag', false] }, { flag: true }, MIXED.inputs)).toBe(true);
    expect(run({ ne: ['flag', 'true'] }, { flag: true }, MIXED.inputs)).toBe(false);
    expect(run({ in: ['flag', [false]] }, { flag: false }, MIXED.inputs)).toBe(true);
    expect(run({ nin: ['flag', ['false']] }, { flag: false }, MIXED.inputs)).toBe(false);
  });

  it('strings compare exactly (case-sensitive)', () => {
    expectTable(
      { label: 'berlin' },
      [
        [{ eq: ['label', 'berlin'] }, true],
        [{ eq: ['label', 'Berlin'] }, false],
        [{ ne: ['label', 'paris'] }, true],
        [{ ne: ['label', 'berlin'] }, false],
        [{ in: ['label', ['berlin', 'paris']] }, true],
        [{ in: ['label', ['rome', 'paris']] }, false],
        [{ nin: ['label', ['bob', 'alice']] }, true],
        [{ nin: ['label', ['berlin']] }, false],
      ],
      MIXED.inputs,
    );
  });

  it('bytes32 compares as case-insensitive hex; tuple fields are named param.field', () => {
    const id = `0x${'ab'.repeat(32)}`;
    expect(run({ eq: ['id', id.toUpperCase().replace('0X', '0x')] }, { id }, MIXED.inputs)).toBe(true);
    const pos = { x: 9n, owner: A_CHECKSUM };
    expect(run({ and: [{ gt: ['pos.x', '8'] }, { eq: ['pos.owner', A] }] }, { pos }, MIXED.inputs)).toBe(true);
    expect(run({ gt: ['pos.x', '9'] }, { pos }, MIXED.inputs)).toBe(false);
  });

  it('an empty in-list matches nothing; a missing value equals nothing', () => {
    expect(run({ in: ['value', []] }, { value: 1n })).toBe(false);
    expect(run({ nin: ['value', []] }, { value: 1n })).toBe(true);
    expect(run({ eq: ['value', '1'] }, {})).toBe(false);
    expect(run({ ne: ['value', '1'] }, {})).toBe(true);
    expect(run({ gt: ['value', '0'] }, {})).toBe(false);
  });

  it('{} (the service default) matches everything', () => {
    expect(checkFilter({}, TRANSFER.inputs, 'advancedOptions.0.filter')).toBeNull();
    expect(run({}, { value: 0n })).toBe(true);
  });
});

describe('compileFilter: and / or', () => {
  const f: FilterExpr = {
    or: [
      { and: [{ eq: ['from', '0x0000000000000000000000000000000000000000'] }, { gte: ['value', '10000000000'] }] },
      { and: [{ eq: ['to', '0x0000000000000000000000000000000000000000'] }, { gte: ['value', '10000000000'] }] },
    ],
  };
  const ZERO = '0x0000000000000000000000000000000000000000';

  it('evaluates the documented mint/burn example', () => {
    expect(run(f, { from: ZERO, to: A, value: 10_000_000_000n })).toBe(true);
    expect(run(f, { from: A, to: ZERO, value: 10_000_000_000n })).toBe(true);
    expect(run(f, { from: ZERO, to: A, value: 9_999_999_999n })).toBe(false);
    expect(run(f, { from: A, to: B, value: 10n ** 30n })).toBe(false);
  });

  it('and needs every part, or any part', () => {
    const both: FilterExpr = { and: [{ gt: ['value', '1000000000000000000'] }, { in: ['to', [A, B]] }] };
    expect(run(both, { from: A, to: B, value: E18 + 1n })).toBe(true);
    expect(run(both, { from: A, to: B, value: E18 })).toBe(false);
    expect(run(both, { from: A, to: A.replace('f5', 'f6'), value: E18 + 1n })).toBe(false);
    const either: FilterExpr = { or: [{ eq: ['from', A] }, { eq: ['to', A] }] };
    expect(run(either, { from: B, to: A_CHECKSUM, value: 0n })).toBe(true);
    expect(run(either, { from: B, to: B, value: 0n })).toBe(false);
  });

  it('reads the special stream variables from the context', () => {
    const g = compileFilter(
      {
        and: [
          { eq: ['moralis_streams_contract_address', A] },
          { eq: ['moralis_streams_chain_id', '0x1'] },
          { eq: ['moralis_streams_possibleSpam', 'false'] },
        ],
      },
      TRANSFER.inputs,
    );
    expect(g({}, { contractAddress: A_CHECKSUM, chainId: '0x1', possibleSpam: false })).toBe(true);
    expect(g({}, { contractAddress: A_CHECKSUM, chainId: 1, possibleSpam: false })).toBe(true);
    expect(g({}, { contractAddress: A_CHECKSUM, chainId: '0x89', possibleSpam: false })).toBe(false);
    expect(g({}, { contractAddress: A_CHECKSUM, chainId: '0x1', possibleSpam: true })).toBe(false);
    expect(g({}, { contractAddress: B, chainId: '0x1', possibleSpam: false })).toBe(false);
    expect(g({})).toBe(false);
  });
});

describe('checkFilter', () => {
  const P = 'advancedOptions.0.filter';
  const check = (expr: unknown, inputs = TRANSFER.inputs): string | null => checkFilter(expr, inputs, P);

  it('accepts the documented forms', () => {
    expect(check({ eq: ['from', A] })).toBeNull();
    expect(check({ gt: ['value', '100000000000'] })).toBeNull();
    expect(check({ gte: ['value', 1000000000] })).toBeNull();
    expect(check({ in: ['value', ['1000', '1001', '1002']] })).toBeNull();
    expect(check({ and: [{ eq: ['from', A] }, { gt: ['value', '100000000000000000000'] }] })).toBeNull();
    expect(check({ eq: ['moralis_streams_possibleSpam', 'false'] })).toBeNull();
    expect(check({ eq: ['moralis_streams_chain_id', '0x1'] })).toBeNull();
  });

  it('names the path of each problem', () => {
    expect(check({ and: [{ eq: ['from', A] }, { gt: ['value', 'lots'] }] })).toBe(
      `${P}.and.1.gt.1: "lots" is not an integer (uint256 needs a number or a string of digits)`,
    );
    expect(check({ like: ['from', A] })).toBe(`${P}.like: unknown operator (one of and, or, eq, ne, lt, gt, lte, gte, in, nin)`);
    expect(check({ or: [{ eq: ['from', A] }, { between: ['value', 1] }] })).toBe(
      `${P}.or.1.between: unknown operator (one of and, or, eq, ne, lt, gt, lte, gte, in, nin)`,
    );
    expect(check({ and: [{ eq: ['from', A] }] })).toBe(`${P}.and: needs an array of at least 2 filters`);
    expect(check({ or: { eq: ['from', A] } })).toBe(`${P}.or: needs an array of at least 2 filters`);
    expect(check({ eq: ['from'] })).toBe(`${P}.eq: needs [parameter, value]`);
    expect(check({ eq: ['from', A, B] })).toBe(`${P}.eq: needs [parameter, value]`);
    expect(check({ eq: [5, A] })).toBe(`${P}.eq.0: a parameter name`);
    expect(check({ eq: ['sender', A] })).toBe(`${P}.eq.0: "sender" is not a parameter of the event (from, to, value)`);
    expect(check({ eq: ['from', '0x1234'] })).toBe(`${P}.eq.1: "0x1234" is not an address (0x and 40 hex digits)`);
    expect(check({ lt: ['from', '5'] })).toBe(`${P}.lt.0: lt compares numbers, "from" is address`);
    expect(check({ gt: ['value', '1.5'] })).toBe(`${P}.gt.1: "1.5" is not an integer (uint256 needs a number or a string of digits)`);
    expect(check({ gt: ['value', 1.5] })).toBe(`${P}.gt.1: 1.5 is not an integer (uint256 needs a number or a string of digits)`);
    expect(check({ gte: ['value', '-1'] })).toBe(`${P}.gte.1: "-1" is out of range for uint256`);
    expect(check({ eq: ['value', (2n ** 256n).toString()] })).toBe(`${P}.eq.1: "${2n ** 256n}" is out of range for uint256`);
    expect(check({ in: ['to', [A, 'bob']] })).toBe(`${P}.in.1.1: "bob" is not an address (0x and 40 hex digits)`);
    expect(check({ nin: ['to', A] })).toBe(`${P}.nin.1: needs an array of values`);
    expect(check({ eq: ['from', A], ne: ['to', A] })).toBe(`${P}: a filter has exactly one operator, found eq, ne`);
    expect(check({ and: [{ eq: ['from', A] }, {}] })).toBe(`${P}.and.1: a filter has exactly one operator, found none`);
    expect(check([{ eq: ['from', A] }])).toBe(`${P}: a filter is an object with one operator (and, or, eq, ne, lt, gt, lte, gte, in, nin)`);
    expect(check({ and: [{ eq: ['from', A] }, 'x'] })).toBe(
      `${P}.and.1: a filter is an object with one operator (and, or, eq, ne, lt, gt, lte, gte, in, nin)`,
    );
  });

  it('checks values against the other parameter types', () => {
    const M = MIXED.inputs;
    expect(check({ eq: ['small', '256'] }, M)).toBe(`${P}.eq.1: "256" is out of range for uint8`);
    expect(check({ eq: ['delta', (-(2n ** 255n) - 1n).toString()] }, M)).toBe(
      `${P}.eq.1: "${-(2n ** 255n) - 1n}" is out of range for int256`,
    );
    expect(check({ eq: ['delta', (-(2n ** 255n)).toString()] }, M)).toBeNull();
    expect(check({ eq: ['flag', 1] }, M)).toBe(`${P}.eq.1: 1 is not a bool (true or false)`);
    expect(check({ eq: ['label', 5] }, M)).toBe(`${P}.eq.1: 5 is not a string`);
    expect(check({ gt: ['label', '5'] }, M)).toBe(`${P}.gt.0: gt compares numbers, "label" is string`);
    expect(check({ eq: ['id', '0xab'] }, M)).toBe(`${P}.eq.1: "0xab" is not bytes32 (0x and 64 hex digits)`);
    expect(check({ eq: ['pos', '1'] }, M)).toBe(`${P}.eq.0: "pos": tuple values can't be compared`);
    expect(check({ eq: ['pos.y', '1'] }, M)).toBe(`${P}.eq.0: "pos.y" is not a parameter of pos (x, owner)`);
    expect(check({ eq: ['flag.x', '1'] }, M)).toBe(`${P}.eq.0: "flag" is bool, not a tuple`);
    expect(check({ eq: ['tag', 'hello'] }, M)).toBe(`${P}.eq.0: "tag" is an indexed string: the log carries only its hash`);
    expect(check({ eq: ['moralis_streams_possibleSpam', 'maybe'] }, M)).toBe(`${P}.eq.1: "maybe" is not a bool (true or false)`);
  });

  it('compileFilter refuses what checkFilter refuses', () => {
    expect(() => compileFilter({ gt: ['value', 'lots'] } as FilterExpr, TRANSFER.inputs)).toThrow(
      new TypeError('filter.gt.1: "lots" is not an integer (uint256 needs a number or a string of digits)'),
    );
  });
});

describe('on a log decoded by viem', () => {
  const log = (from: `0x${string}`, to: `0x${string}`, value: bigint) => ({
    // Both indexed args are given, so every topic is a plain hash.
    topics: encodeEventTopics({ abi: [TRANSFER], eventName: 'Transfer', args: { from, to } }) as [Hex, ...Hex[]],
    data: encodeAbiParameters([{ type: 'uint256' }], [value]),
  });
  const decode = (l: ReturnType<typeof log>) => decodeEventLog({ abi: [TRANSFER], ...l }).args as Record<string, unknown>;
  const filter = compileFilter(
    {
      and: [
        { eq: ['from', A_CHECKSUM.toLowerCase()] },
        { gt: ['value', '1000000000000000000'] },
        { in: ['to', ['0x00000000000000000000000000000000000000BB', A]] },
      ],
    },
    TRANSFER.inputs,
  );

  it('gets checksummed addresses and bigint values, and matches them', () => {
    const args = decode(log(A_CHECKSUM, B, E18 + 1n));
    expect(args).toEqual({ from: A_CHECKSUM, to: B, value: E18 + 1n });
    expect(filter(args)).toBe(true);
  });

  it('rejects the same transfer one wei lower, or to another address', () => {
    expect(filter(decode(log(A_CHECKSUM, B, E18)))).toBe(false);
    expect(filter(decode(log(A_CHECKSUM, '0x00000000000000000000000000000000000000cc', E18 + 1n)))).toBe(false);
    expect(filter(decode(log('0x00000000000000000000000000000000000000cc', B, E18 + 1n)))).toBe(false);
  });
});
