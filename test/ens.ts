import { labelhash, namehash, zeroHash, type Hex } from 'viem';
import { DEV_ACCOUNTS, deploy, write, type Deployed } from './contracts.js';

/**
 * A minimal ENS on a devnet (test/contracts' registry, public resolver and reverse registrar): `eth` and
 * `addr.reverse` under the root, names registered by the first dev account, for CHAINPOST_ENS.
 */
export interface Ens {
  registry: Deployed;
  resolver: Deployed;
  /** `label.eth` → `address`. */
  register(label: string, address: Hex): Promise<void>;
  /** `account` names itself `name` (its primary name, read back through addr.reverse). */
  nameSelf(account: (typeof DEV_ACCOUNTS)[number], name: string): Promise<void>;
}

export async function deployEns(rpcUrl: string): Promise<Ens> {
  const [K0] = DEV_ACCOUNTS;
  const owner = K0.address;
  const send = (c: Deployed, functionName: string, args: readonly unknown[], account = K0) =>
    write(rpcUrl, { address: c.address, abi: c.abi, functionName, args, account });
  const registry = await deploy(rpcUrl, 'TestENSRegistry');
  const resolver = await deploy(rpcUrl, 'TestENSResolver', [registry.address]);
  const reverse = await deploy(rpcUrl, 'TestReverseRegistrar', [registry.address, resolver.address]);
  await send(registry, 'setSubnodeOwner', [zeroHash, labelhash('eth'), owner]);
  await send(registry, 'setSubnodeOwner', [zeroHash, labelhash('reverse'), owner]);
  await send(registry, 'setSubnodeOwner', [namehash('reverse'), labelhash('addr'), reverse.address]);
  return {
    registry,
    resolver,
    async register(label, address) {
      await send(registry, 'setSubnodeOwner', [namehash('eth'), labelhash(label), owner]);
      await send(registry, 'setResolver', [namehash(`${label}.eth`), resolver.address]);
      await send(resolver, 'setAddr', [namehash(`${label}.eth`), address]);
    },
    nameSelf: (account, name) => send(reverse, 'setName', [name], account).then(() => undefined),
  };
}
