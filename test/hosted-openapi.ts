import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

/**
 * The hosted service's Data API OpenAPI document 2.2 (a gzipped copy, source in test/fixtures/README.md), for the
 * tests that hold this server to it: its operations, and its response schemas as JSON Schema validators.
 */

type Json = Record<string, any>;
export type OpenApiSchema = Json & { $ref?: string; properties?: Record<string, unknown> };
export interface OpenApiParameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema?: OpenApiSchema;
}
export interface OpenApiOperation {
  operationId: string;
  parameters?: OpenApiParameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema: OpenApiSchema }> };
  responses: Record<string, { content?: Record<string, { schema?: OpenApiSchema }> }>;
}

export const HOSTED = JSON.parse(
  gunzipSync(readFileSync(new URL('./fixtures/reference/data-api-openapi-2.2.json.gz', import.meta.url))).toString('utf8'),
) as { paths: Record<string, Record<string, OpenApiOperation>>; components: { schemas: Record<string, OpenApiSchema> } };

/** A schema, its `$ref` followed (one level: the document's references name its components). */
export const resolved = (schema: OpenApiSchema): OpenApiSchema =>
  schema.$ref === undefined ? schema : HOSTED.components.schemas[schema.$ref.split('/').at(-1)!]!;

/** Every operation of the document: its method (upper case), path template and description. */
export const hostedOperations = (): Array<{ method: string; path: string; op: OpenApiOperation }> =>
  Object.entries(HOSTED.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
  );

/** The fields a 400 about the operation may name: its parameters, its body's properties, the body as a whole. */
export const fieldsOf = (op: OpenApiOperation): Set<string> =>
  new Set([
    'body',
    ...(op.parameters ?? []).map((p) => p.name),
    ...Object.values(op.requestBody?.content ?? {}).flatMap((c) => Object.keys(resolved(c.schema).properties ?? {})),
  ]);

const orNull = (schema: unknown): Json => ({ anyOf: [schema, { type: 'null' }] });

/**
 * An OpenAPI 3.0 schema as JSON Schema 2020-12: `nullable` becomes a null alternative, and so may every property's
 * value be null (the hosted service leaves many absent values null without saying so; the fields stay required where
 * the document requires them); examples go; references point into the document's components (schema id `hosted`), without their siblings (OpenAPI 3.0);
 * `oneOf` reads as `anyOf` (below).
 */
function toJsonSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(toJsonSchema);
  if (schema === null || typeof schema !== 'object') return schema;
  // In OpenAPI 3.0 a reference's siblings are ignored (`type: array` beside a reference to an object, in the document).
  const ref = (schema as Json)['$ref'];
  if (typeof ref === 'string') return { $ref: `hosted${ref}` };
  const out: Json = {};
  for (const [k, v] of Object.entries(schema as Json)) {
    if (k === 'nullable' || k === 'example') continue;
    // The document's one oneOf (a history item's contract_interactions) lists four objects that require nothing, so
    // every object matches them all and none could match exactly one: read as anyOf.
    if (k === 'oneOf') out['anyOf'] = toJsonSchema(v);
    else if (k === 'properties')
      out[k] = Object.fromEntries(Object.entries(v as Json).map(([name, sub]) => [name, orNull(toJsonSchema(sub))]));
    else out[k] = toJsonSchema(v);
  }
  return (schema as Json)['nullable'] === true ? orNull(out) : out;
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** The validator of each operation's answer by status (its JSON schema as toJsonSchema makes it); undefined where none is documented. */
export function hostedValidators(): (method: string, path: string, status: number) => ValidateFunction | undefined {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  addFormats(ajv);
  // OpenAPI's numeric formats, which JSON Schema does not define: the type says it all.
  for (const f of ['float', 'double', 'int32', 'int64']) ajv.addFormat(f, true);
  ajv.addSchema({ $id: 'hosted', components: { schemas: toJsonSchema(HOSTED.components.schemas) } });
  const made = new Map<string, ValidateFunction | undefined>();
  return (method, path, status) => {
    const key = `${method} ${path} ${status}`;
    if (!made.has(key)) {
      const schema = HOSTED.paths[path]?.[method.toLowerCase()]?.responses[String(status)]?.content?.['application/json']?.schema;
      made.set(key, schema === undefined ? undefined : ajv.compile(toJsonSchema(schema) as Json));
    }
    return made.get(key);
  };
}

/** The errors of a validation that say something: not the null alternatives toJsonSchema added, nor the anyOf over them. */
export const meaningful = (errors: readonly ErrorObject[]): ErrorObject[] =>
  errors.filter((e) => e.keyword !== 'anyOf' && !(e.keyword === 'type' && (e.params as { type: string }).type === 'null'));

/** Where an error is, as a pattern: the instance path with item indexes as `*`, a missing property's name appended. */
export function errorAt(e: ErrorObject): string {
  const at = e.instancePath.replace(/\/\d+(?=\/|$)/g, '/*');
  return e.keyword === 'required' ? `${at}/${(e.params as { missingProperty: string }).missingProperty}` : at;
}
