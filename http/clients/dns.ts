import { lookup } from 'node:dns/promises';
import type { Resolver } from '../../engine/ports.js';

/** The system resolver (getaddrinfo, as Node connects by default): every address of the name. */
export const systemResolver: Resolver = {
  async lookup(hostname) {
    const answers = await lookup(hostname, { all: true, verbatim: true });
    return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
  },
};
