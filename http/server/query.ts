/** Query-string helpers: arrays arrive as `key[]=a&key[]=b`, `key=a&key=b` or `key=a,b`. */
export const queryParams = (query: string): URLSearchParams => new URLSearchParams(query);

export function queryList(params: URLSearchParams, name: string): string[] {
  return [...params.getAll(name), ...params.getAll(`${name}[]`)].flatMap((v) => v.split(',')).map((v) => v.trim()).filter((v) => v !== '');
}
