/** Query-string helpers: arrays arrive as `key[]=a&key[]=b`, `key[0]=a&key[1]=b`, `key=a&key=b` or `key=a,b`. */
export const queryParams = (query: string): URLSearchParams => new URLSearchParams(query);

export function queryList(params: URLSearchParams, name: string): string[] {
  const indexed = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\[\\d+\\]$`);
  const given = [...params].filter(([k]) => k === name || k === `${name}[]` || indexed.test(k)).map(([, v]) => v);
  return given.flatMap((v) => v.split(',')).map((v) => v.trim()).filter((v) => v !== '');
}
