/**
 * JSON text as Bitcoin Core writes it: amounts are numbers with exactly 8 decimals (`ValueFromAmount`,
 * e.g. `50.00000000`) and doubles have 16 significant digits (UniValue's `setprecision(16)`). JSON.stringify
 * can write neither, so values carry a marker that is swapped for the exact digits afterwards.
 */

// A string no hex, asm or address can contain; JSON.stringify escapes U+0001 as \u0001.
const MARK = '\u0001';
const MARKED = /"\\u0001(-?[0-9][0-9.e+-]*)"/g;

/** A number written with the given digits. */
class Raw {
  constructor(readonly text: string) {}
  toJSON(): string {
    return MARK + this.text;
  }
}

/** Satoshis as Core's BTC amount: `%d.%08d`. */
export function btc(sats: bigint | number): Raw {
  const n = BigInt(sats);
  const abs = n < 0n ? -n : n;
  return new Raw(`${n < 0n ? '-' : ''}${abs / 100_000_000n}.${String(abs % 100_000_000n).padStart(8, '0')}`);
}

/** A double as C++ `ostream << setprecision(16)` writes it (printf `%.16g`). */
export function double16(x: number): Raw {
  const [mantissa, exp] = x.toExponential(15).split('e') as [string, string];
  const e = Number(exp);
  const trim = (m: string): string => (m.includes('.') ? m.replace(/0+$/, '').replace(/\.$/, '') : m);
  // %g: fixed notation for exponents in [-4, 16), else d.ddde±XX.
  if (e >= -4 && e < 16) return new Raw(trim(x.toFixed(15 - e)));
  return new Raw(`${trim(mantissa)}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`);
}

/** JSON text of a value whose amounts and doubles were made with `btc` / `double16`. */
export function coreJson(value: unknown): string {
  return JSON.stringify(value).replace(MARKED, '$1');
}
