/** A parsed query string, read only: one parse may be handed to several readers of the same request. */
export type QueryParams = Omit<URLSearchParams, 'append' | 'delete' | 'set' | 'sort'>;

/** The last query string parsed and its parse: a request's readers (its chain, fields, lists) ask for the same one in a row. */
let last: { query: string; params: QueryParams } = { query: '', params: new URLSearchParams('') };

/** Query-string helpers: arrays arrive as `key[]=a&key[]=b`, `key[0]=a&key[1]=b`, `key=a&key=b` or `key=a,b`. */
export function queryParams(query: string): QueryParams {
  if (query !== last.query) last = { query, params: new URLSearchParams(query) };
  return last.params;
}

export function queryList(params: QueryParams, name: string): string[] {
  const given: string[] = [];
  for (const [k, v] of params) if (k === name || k === `${name}[]` || isIndexed(k, name)) given.push(v);
  return given
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
}

/** `name[0]`, `name[1]`, …: an array given with indexes. */
const isIndexed = (key: string, name: string): boolean =>
  key.length > name.length + 2 && key.startsWith(name) && key[name.length] === '[' && /^\d+\]$/.test(key.slice(name.length + 1));
