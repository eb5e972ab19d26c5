/** The Bitcoin script opcodes chainpost reads and writes (output scripts of the standard types). */
export const OP_0 = 0x00;
export const OP_PUSHDATA1 = 0x4c;
export const OP_PUSHDATA2 = 0x4d;
export const OP_PUSHDATA4 = 0x4e;
export const OP_1 = 0x51;
export const OP_16 = 0x60;
export const OP_RETURN = 0x6a;
export const OP_DUP = 0x76;
export const OP_EQUAL = 0x87;
export const OP_EQUALVERIFY = 0x88;
export const OP_HASH160 = 0xa9;
export const OP_CHECKSIG = 0xac;
export const OP_CHECKMULTISIG = 0xae;
