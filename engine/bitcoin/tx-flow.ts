import type { BtcTransaction } from './block.js';
import { classifyScript } from './script.js';

/** An input as the cross-chain API shows it: the address and value of the output it spends (undefined while unknown, and for a coinbase). */
export interface FlowInput {
  address: string | undefined;
  value: number | undefined;
}
/** An output: its index, the address its script pays (undefined: no address, e.g. OP_RETURN) and its value. */
export interface FlowOutput {
  n: number;
  address: string | undefined;
  value: number;
}

/**
 * A Bitcoin transaction's value flow, in satoshis, as the cross-chain API renders it (a wallet's history items and
 * the transaction DTO of /v1/chains/bitcoin: one reading for both): each input's address and value from the output
 * it spends, each output's from its script, and the fee. A coinbase spends nothing (valueIn and fee 0); an input
 * whose spent output is unknown leaves valueIn and the fee unknown (null).
 */
export function txFlow(t: BtcTransaction): {
  ins: FlowInput[];
  outs: FlowOutput[];
  valueIn: number | null;
  valueOut: number;
  fee: number | null;
} {
  const ins = t.vin.map((i) =>
    t.isCoinbase || i.prevout === undefined
      ? { address: undefined, value: undefined }
      : { address: classifyScript(i.prevout.script).address, value: i.prevout.value },
  );
  const outs = t.vout.map((o, n) => ({ n, address: classifyScript(o.script).address, value: o.value }));
  const valueOut = outs.reduce((s, o) => s + o.value, 0);
  const valueIn = t.isCoinbase ? 0 : ins.every((i) => i.value !== undefined) ? ins.reduce((s, i) => s + i.value!, 0) : null;
  return { ins, outs, valueIn, valueOut, fee: t.isCoinbase ? 0 : valueIn === null ? null : valueIn - valueOut };
}
