import { z } from 'zod';

/** Pieces the Data API's answer schemas share (each endpoint's schema is beside the code that builds its answer). */

/** The answer of a paged list (the hosted service's fields): where the page is, its size, the next page's cursor, its items. */
export const pageAnswer = <T extends z.ZodType>(item: T) =>
  z.object({
    page: z.int(),
    page_size: z.int(),
    cursor: z.string().nullable().meta({ description: "The next page's cursor (pass it as it is); null on the last page" }),
    result: z.array(item),
  });

/** Off-chain fields (labels, entities, logos): this server keeps none. */
export const offChain = z.string().nullable().meta({ description: 'Off-chain data this server does not keep: null' });

/** An item's parties as the transfer and transaction items name them. */
export const partiesAnswer = {
  from_address_entity: offChain,
  from_address_entity_logo: offChain,
  from_address: z.string(),
  from_address_label: offChain,
  to_address_entity: offChain,
  to_address_entity_logo: offChain,
  to_address: z.string(),
  to_address_label: offChain,
};
