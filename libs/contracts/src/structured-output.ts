import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import type AjvCore from 'ajv/dist/core';
import Ajv2019 from 'ajv/dist/2019';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { z } from 'zod';

/**
 * Structured output (docs/adr/0048-structured-output.md): the shape a turn's final answer must have,
 * as a client asked for it (Chat Completions `response_format`, Responses `text.format`, the native
 * `responseFormat` of POST /v1/sessions/{id}/messages). Stored with the turn (`turns.response_format`),
 * so a turn resumed on any worker keeps it; passed to providers that enforce it natively and, in every
 * case, checked here against the final answer (one repair round, then the turn fails
 * `structured_output_invalid`). Plain text is no format: it is stored as null.
 */

/** A name OpenAI accepts for a `json_schema` format: letters, digits, `_` and `-`, at most 64. */
const FormatName = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'name must be 1 to 64 letters, digits, underscores or dashes');

/** A JSON Schema: an object (its content is checked by `responseFormatProblem`, not by zod). */
const JsonSchemaObject = z.record(z.string(), z.unknown());

/** The format as stored and as the engine and providers read it. */
export const ResponseFormat = z.discriminatedUnion('type', [
  /** The answer is one JSON object (any keys). */
  z.strictObject({ type: z.literal('json_object') }),
  /** The answer is JSON valid under `schema` (JSON Schema draft-07, 2019-09 or 2020-12). */
  z.strictObject({
    type: z.literal('json_schema'),
    name: FormatName,
    description: z.string().max(10_000).optional(),
    schema: JsonSchemaObject,
    /** OpenAI's strict mode (the schema is in the subset the provider enforces while decoding). */
    strict: z.boolean().optional(),
  }),
]);
export type ResponseFormat = z.infer<typeof ResponseFormat>;

/** Chat Completions' `response_format` as OpenAI defines it (`text` is the default: no format). */
export const ChatResponseFormat = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('text') }),
  z.strictObject({ type: z.literal('json_object') }),
  z.strictObject({
    type: z.literal('json_schema'),
    json_schema: z.strictObject({
      name: FormatName,
      description: z.string().max(10_000).optional(),
      schema: JsonSchemaObject,
      strict: z.boolean().nullable().optional(),
    }),
  }),
]);
export type ChatResponseFormat = z.infer<typeof ChatResponseFormat>;

/** Responses' `text.format`: the same three, the schema's fields flat beside `type`. */
export const TextFormat = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('text') }),
  z.strictObject({ type: z.literal('json_object') }),
  z.strictObject({
    type: z.literal('json_schema'),
    name: FormatName,
    description: z.string().max(10_000).optional(),
    schema: JsonSchemaObject,
    strict: z.boolean().nullable().optional(),
  }),
]);
export type TextFormat = z.infer<typeof TextFormat>;

/** A Chat Completions `response_format` as the stored format; `text` (or none) is null. */
export function fromChatResponseFormat(f: ChatResponseFormat | null | undefined): ResponseFormat | null {
  if (!f || f.type === 'text') return null;
  if (f.type === 'json_object') return { type: 'json_object' };
  return schemaFormat(f.json_schema);
}

/** A Responses `text.format` as the stored format; `text` (or none) is null. */
export function fromTextFormat(f: TextFormat | null | undefined): ResponseFormat | null {
  if (!f || f.type === 'text') return null;
  if (f.type === 'json_object') return { type: 'json_object' };
  return schemaFormat(f);
}

function schemaFormat(f: {
  name: string;
  schema: Record<string, unknown>;
  description?: string;
  strict?: boolean | null;
}): ResponseFormat {
  return {
    type: 'json_schema',
    name: f.name,
    schema: f.schema,
    ...(f.description === undefined ? {} : { description: f.description }),
    ...(f.strict == null ? {} : { strict: f.strict }),
  };
}

/** The stored format as Responses echoes it in `text.format` (`text` when there is none). */
export function toTextFormat(f: ResponseFormat | null | undefined): TextFormat {
  if (!f) return { type: 'text' };
  return f;
}

// ---- the validator -----------------------------------------------------------------------------

/**
 * ajv in strict schema mode: an unknown keyword (a typo, a vendor extension the validator would
 * silently ignore) makes the schema malformed rather than a check that never fails. Type and
 * `required` strictness stay off: schemas that generators (zod, Pydantic) emit commonly omit
 * redundant `type`s. Formats (`email`, `date-time`…) are checked.
 */
const options = {
  strict: true,
  strictTypes: false,
  strictTuples: false,
  strictRequired: false,
  allErrors: true,
  validateSchema: true,
} as const;

const validators = {
  draft7: addFormats(new Ajv(options)),
  draft2019: addFormats(new Ajv2019(options)),
  draft2020: addFormats(new Ajv2020(options)),
};

/** Which ajv reads a schema, by its `$schema` (none: draft-07, what OpenAI and zod emit). */
function validatorFor(schema: Record<string, unknown>): AjvCore | string {
  const declared = schema.$schema;
  if (declared === undefined) return validators.draft7;
  if (typeof declared !== 'string') return '$schema must be a string';
  const uri = declared.replace(/#$/, '').replace(/^https:/, 'http:');
  if (uri === 'http://json-schema.org/draft-07/schema') return validators.draft7;
  if (uri === 'http://json-schema.org/draft/2019-09/schema') return validators.draft2019;
  if (uri === 'http://json-schema.org/draft/2020-12/schema') return validators.draft2020;
  return `$schema ${declared} is not supported: use draft-07, 2019-09 or 2020-12`;
}

/** Compiled validators by schema text: a session asks with the same schema turn after turn. */
const compiled = new Map<string, ValidateFunction | string>();
const COMPILED_MAX = 500;

/** The schema's validator, or why it is not a usable JSON Schema. */
function compile(schema: Record<string, unknown>): ValidateFunction | string {
  const key = JSON.stringify(schema);
  const hit = compiled.get(key);
  if (hit !== undefined) return hit;
  let result: ValidateFunction | string;
  const ajv = validatorFor(schema);
  if (typeof ajv === 'string') result = ajv;
  else {
    try {
      // A copy: ajv keeps compiled schemas by `$id`, and the same `$id` may come with another body.
      const { $id: _, ...rest } = schema;
      result = ajv.compile(rest);
    } catch (err) {
      result = (err as Error).message;
    }
  }
  if (compiled.size >= COMPILED_MAX) compiled.delete(compiled.keys().next().value as string);
  compiled.set(key, result);
  return result;
}

/**
 * Why a requested format cannot be used (the 400 of every protocol names it), or undefined: the
 * schema must compile under the validator (an unknown keyword, a wrong type for a keyword, an
 * unsupported `$schema` do not).
 */
export function responseFormatProblem(f: ResponseFormat): string | undefined {
  if (f.type === 'json_object') return undefined;
  const v = compile(f.schema);
  if (typeof v === 'string') return `schema is not a valid JSON Schema: ${v}`;
  return undefined;
}

/** How a final answer measured up to the format: its JSON text, or what is wrong with it. */
export type StructuredCheck = { ok: true; text: string; value: unknown } | { ok: false; message: string };

const FENCED = /^```(?:json)?\s*\n([\s\S]*?)\n?```$/i;

/**
 * Checks a final answer against the format. An answer wrapped in one Markdown code fence (which
 * models write out of habit) is unwrapped; anything else around the JSON is a mismatch.
 */
export function checkStructuredAnswer(f: ResponseFormat, answer: string): StructuredCheck {
  const trimmed = answer.trim();
  const text = (FENCED.exec(trimmed)?.[1] ?? trimmed).trim();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, message: `the answer is not JSON (${(err as Error).message})` };
  }
  if (f.type === 'json_object') {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      return { ok: false, message: 'the answer is JSON but not a JSON object' };
    }
    return { ok: true, text, value };
  }
  const validate = compile(f.schema);
  // Refused at admission; a schema stored before a validator change is reported, not thrown.
  if (typeof validate === 'string') return { ok: false, message: `the schema is not usable: ${validate}` };
  if (validate(value)) return { ok: true, text, value };
  return { ok: false, message: describeErrors(validate.errors ?? []) };
}

/** ajv's errors as one line: `$.age must be integer; $ must have required property 'name'`. */
function describeErrors(errors: ErrorObject[]): string {
  const lines = errors
    .slice(0, 10)
    .map((e) => `$${e.instancePath.replace(/\//g, '.')} ${e.message ?? 'is invalid'}`);
  const more = errors.length > 10 ? `; and ${errors.length - 10} more` : '';
  return `the answer does not match the schema: ${lines.join('; ')}${more}`;
}

/** What the model is told the answer must be: for providers that cannot enforce the format themselves. */
export function formatInstruction(f: ResponseFormat): string {
  if (f.type === 'json_object') {
    return 'Your final answer must be a single JSON object and nothing else: no prose, no Markdown code fences.';
  }
  return (
    `Your final answer must be a single JSON value valid under this JSON Schema ("${f.name}"` +
    `${f.description ? `: ${f.description}` : ''}), and nothing else: no prose, no Markdown code fences.\n` +
    JSON.stringify(f.schema)
  );
}

/** The repair request after a final answer that did not match: what failed, and what to send instead. */
export function repairPrompt(f: ResponseFormat, problem: string): string {
  return `Your previous answer cannot be used: ${problem}.\n` + `Answer again. ${formatInstruction(f)}`;
}
