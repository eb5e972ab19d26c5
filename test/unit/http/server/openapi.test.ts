import SwaggerParser from '@apidevtools/swagger-parser';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openApiDocument } from '../../../../http/server/openapi.js';
import { json, type Route } from '../../../../http/server/route.js';

/** An ABI parameter: a tuple holds parameters (z.lazy, which zod writes with $defs and a $ref to them). */
type Param = { type: string; components?: Param[] | undefined };
const param: z.ZodType<Param> = z.lazy(() => z.object({ type: z.string(), components: z.array(param).optional() }));

const route = (pattern: string, operationId: string): Route => ({
  method: 'POST',
  pattern,
  area: 'data',
  auth: 'key',
  body: true,
  doc: { operationId, body: z.object({ abi: z.array(param) }), responses: { 200: z.array(param) } },
  handle: () => json(200, []),
});

describe('openApiDocument', () => {
  it('behavior: moves the definitions of recursive schemas to components, one name each, so the document resolves', async () => {
    const doc = openApiDocument([route('/a', 'callA'), route('/b', 'callB')], { now: 0, version: 'test' });
    const text = JSON.stringify(doc);
    expect(text).not.toContain('#/$defs/');
    expect(text).not.toContain('"$defs"');
    const schemas = (doc['components'] as { schemas: Record<string, unknown> }).schemas;
    // The body's and the answer's definitions of each operation: four, none shared by name.
    expect(
      Object.keys(schemas)
        .filter((k) => k.startsWith('call'))
        .sort(),
    ).toEqual(['callA_schema0', 'callA_schema02', 'callB_schema0', 'callB_schema02']);
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeDefined();
  });
});
