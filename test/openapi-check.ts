import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

/**
 * Every answer a test gets through the shared callers (helpers.ts apiCaller) is checked against the server's own
 * OpenAPI document (GET /openapi.json): its status must be one the operation documents, and its body must validate
 * against that status's schema. So the whole suite exercises the document's response schemas, and a route whose
 * answer drifts from them fails the test that called it.
 */

type Json = Record<string, any>;

/** A server's document, ready to check answers: its operations by path, each answer's validator made once. */
interface Checker {
  check(method: string, path: string, status: number, contentType: string | null, body: unknown): void;
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const byUrl = new Map<string, Promise<Checker>>();
/** Servers answering the same document share its checker (most tests' servers have the same routes). */
const byText = new Map<string, Checker>();

/** Checks one answer of the server at `url` (throws naming what does not match). A server with no document is not checked. */
export async function checkAnswer(
  url: string,
  method: string,
  path: string,
  status: number,
  contentType: string | null,
  body: unknown,
): Promise<void> {
  let checker = byUrl.get(url);
  if (checker === undefined) byUrl.set(url, (checker = load(url)));
  try {
    (await checker).check(method, path, status, contentType, body);
  } catch (err) {
    // The document moves with the service date (a removal taking effect on a test clock): the current one decides.
    const fresh = load(url);
    byUrl.set(url, fresh);
    // The same document, or none to read now (the server gone since it answered): the first check's failure stands.
    if ((await fresh) === (await checker) || (await fresh) === NONE) throw err;
    (await fresh).check(method, path, status, contentType, body);
  }
}

const NONE: Checker = { check() {} };

async function load(url: string): Promise<Checker> {
  let res: Response;
  try {
    res = await fetch(`${url}/openapi.json`);
  } catch {
    // The server stopped since it answered (a kill test): nothing to check that answer against.
    return NONE;
  }
  // A node without the api role, or an older build, has no document; any other failure to give it is the server's.
  if (res.status === 404) return NONE;
  if (res.status !== 200) throw new Error(`OpenAPI: GET ${url}/openapi.json answered ${res.status}: ${await res.text()}`);
  const text = await res.text();
  let found = byText.get(text);
  if (found === undefined) byText.set(text, (found = checkerOf(JSON.parse(text) as Json)));
  return found;
}

const pointer = (...parts: string[]): string => parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

interface PathEntry {
  template: string;
  regex: RegExp;
  /** Per segment, 1 for a fixed one: the router prefers fixed segments, left to right. */
  fixed: number[];
}

export function checkerOf(doc: Json): Checker {
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateSchema: false });
  addFormats(ajv);
  ajv.addSchema(doc, 'doc');
  const paths: PathEntry[] = Object.keys(doc['paths'] as Json).map((template) => {
    const segments = template.split('/').slice(1);
    const regex = new RegExp(
      `^/${segments.map((s) => (s === '{path}' ? '.+' : s.startsWith('{') ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/')}$`,
    );
    return { template, regex, fixed: segments.map((s) => (s.startsWith('{') ? 0 : 1)) };
  });
  const validators = new Map<string, ValidateFunction>();
  const validator = (ref: string): ValidateFunction => {
    let v = validators.get(ref);
    if (v === undefined) validators.set(ref, (v = ajv.getSchema(`doc#${ref}`)!));
    return v;
  };
  return {
    check(method, rawPath, status, contentType, body) {
      const path = rawPath.split('?')[0]!;
      const matches = paths.filter((p) => p.regex.test(path)).sort((a, b) => moreFixed(b.fixed, a.fixed));
      const m = method.toLowerCase();
      const entry = matches.find((p) => (doc['paths'][p.template] as Json)[m] !== undefined);
      // No route takes it: the server's "no route" answer, which no operation describes; any other answer is a route
      // the document leaves out.
      if (entry === undefined) {
        if (status === 404) return;
        throw new Error(`OpenAPI: ${method} ${rawPath} → ${status}: no operation of the document takes it: ${snippet(body)}`);
      }
      const op = (doc['paths'][entry.template] as Json)[m] as Json;
      const responses = op['responses'] as Json;
      const answer = responses[String(status)] as Json | undefined;
      const where = `${method} ${rawPath} → ${status} (${op['operationId']}, ${entry.template})`;
      if (answer === undefined)
        throw new Error(`OpenAPI: ${where} is an answer the document does not give this operation: ${snippet(body)}`);
      const content = (answer['content'] ?? {}) as Json;
      const json = content['application/json'] as Json | undefined;
      if (json === undefined) {
        const type = (contentType ?? '').split(';')[0]!.trim();
        if (!Object.keys(content).some((t) => t === type))
          throw new Error(`OpenAPI: ${where} answered ${type}, the document says ${Object.keys(content).join(', ')}`);
        return;
      }
      if (json['schema'] === undefined) return;
      const v = validator(pointer('', 'paths', entry.template, m, 'responses', String(status), 'content', 'application/json', 'schema'));
      if (!v(body)) {
        const errors = (v.errors ?? [])
          .slice(0, 5)
          .map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`)
          .join('; ');
        throw new Error(`OpenAPI: ${where}: the body does not match the documented schema: ${errors}: ${snippet(body)}`);
      }
    },
  };
}

/** Left to right, the first segment where one is fixed and the other not decides. */
function moreFixed(a: number[], b: number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

const snippet = (body: unknown): string => {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return text === undefined ? '(no body)' : text.length > 400 ? `${text.slice(0, 400)}…` : text;
};
