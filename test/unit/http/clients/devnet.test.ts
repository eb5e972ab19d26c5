import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readConfigOut } from '../../../../http/clients/devnet.js';
import { tempDir } from '../../../helpers.js';

/** anvil's --config-out as the devnet reads it, written after the devnet started reading (anvil answers first). */
const CONFIG = { available_accounts: ['0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266'], private_keys: ['0xac09'], base_fee: '1' };

describe("the devnet's accounts file", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const file = (): string => {
    const d = tempDir();
    dirs.push(d);
    return join(d, 'accounts.json');
  };

  it('behavior: is read once anvil wrote it whole, missing or partial at first', async () => {
    const f = file();
    const read = readConfigOut(f, 5_000);
    await new Promise((r) => setTimeout(r, 60));
    writeFileSync(f, JSON.stringify(CONFIG).slice(0, 20));
    await new Promise((r) => setTimeout(r, 60));
    writeFileSync(f, JSON.stringify(CONFIG));
    expect(await read).toEqual(CONFIG);
  });

  it('behavior: fails naming the file when anvil never writes it', async () => {
    const f = file();
    await expect(readConfigOut(f, 100)).rejects.toThrow(`the devnet's accounts file ${f} was not written by anvil within 100 ms`);
  });
});
