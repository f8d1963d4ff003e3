import Ajv from 'ajv';
import Ajv2019 from 'ajv/dist/2019';
import Ajv2020 from 'ajv/dist/2020';
import { ClientToolRefused, type ToolChoice } from '@switchboard/contracts';
import type { AnswerOutcome } from '@switchboard/store';

/**
 * Client-side tools, the protocol-neutral half (docs/adr/0047): a request's declarations checked
 * before anything is admitted, and an answer's outcome as the one refusal every protocol maps.
 */

/** A tool the client declares: what the engine offers the model beside the agent's own. */
export interface ClientToolDeclaration {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** OpenAI's (and most providers') rule for a function name. */
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

// One compiler per draft for the process: `compile` checks a schema against its meta-schema.
const AJV_OPTIONS = { strict: false, allErrors: false, logger: false } as const;
const compilers = {
  draft7: new Ajv(AJV_OPTIONS),
  draft2019: new Ajv2019(AJV_OPTIONS),
  draft2020: new Ajv2020(AJV_OPTIONS),
};

/**
 * The compiler of the schema's `$schema` (none: draft-07). Generators declare theirs: zod 4's
 * `toJSONSchema` (LangChain, the AI SDK) writes 2020-12, which OpenAI takes as is.
 */
function compilerFor(schema: object): Ajv | Ajv2019 | Ajv2020 | string {
  const declared = (schema as { $schema?: unknown }).$schema;
  if (declared === undefined) return compilers.draft7;
  if (typeof declared !== 'string') return '$schema must be a string';
  const uri = declared.replace(/#$/, '').replace(/^https:/, 'http:');
  if (uri === 'http://json-schema.org/draft-07/schema') return compilers.draft7;
  if (uri === 'http://json-schema.org/draft/2019-09/schema') return compilers.draft2019;
  if (uri === 'http://json-schema.org/draft/2020-12/schema') return compilers.draft2020;
  return `$schema ${declared.slice(0, 100)} is not supported: use draft-07, 2019-09 or 2020-12`;
}

/**
 * Checks declarations: valid names, none twice, none the agent's (`taken`: its tools and every tool
 * the deployment may offer it), parameters a JSON Schema object. `param(i)` names the i-th
 * declaration in the protocol's terms (`tools[2].function`). Throws ClientToolRefused.
 */
export function checkClientTools(
  declared: readonly ClientToolDeclaration[],
  taken: ReadonlySet<string>,
  param: (i: number, field: string) => string,
): ClientToolDeclaration[] {
  const seen = new Set<string>();
  return declared.map((d, i) => {
    if (!NAME.test(d.name)) {
      throw new ClientToolRefused(
        'invalid_tool',
        `${param(i, 'name')}: a tool name is 1 to 64 letters, digits, "_" or "-" (got ${JSON.stringify(d.name.slice(0, 80))})`,
        { param: param(i, 'name') },
      );
    }
    if (seen.has(d.name)) {
      throw new ClientToolRefused(
        'duplicate_tool',
        `${param(i, 'name')}: the tool "${d.name}" is declared twice`,
        {
          param: param(i, 'name'),
        },
      );
    }
    seen.add(d.name);
    if (taken.has(d.name)) {
      throw new ClientToolRefused(
        'tool_name_clash',
        `${param(i, 'name')}: the agent has its own tool named "${d.name}"; name the client's tool differently`,
        { param: param(i, 'name') },
      );
    }
    const parameters = d.parameters;
    const why = schemaProblem(parameters);
    if (why) {
      throw new ClientToolRefused(
        'invalid_schema',
        `${param(i, 'parameters')}: not a valid JSON Schema for the tool's arguments (${why})`,
        { param: param(i, 'parameters') },
      );
    }
    return { name: d.name, description: d.description, parameters };
  });
}

/**
 * A forced tool choice checked against the turn's tools: `required` needs some tool (declared by the
 * client, or one of the agent's `agentTools`), a named one must be declared by the client.
 */
export function checkToolChoice(
  choice: ToolChoice | undefined,
  declared: readonly ClientToolDeclaration[],
  agentTools: number,
  param: string,
): ToolChoice | undefined {
  if (!choice) return undefined;
  if (choice.type === 'required') {
    if (declared.length === 0 && agentTools === 0) {
      throw new ClientToolRefused(
        'invalid_tool_choice',
        `${param}: "required" forces a tool call, but the request declares no tools and the agent has none`,
        { param },
      );
    }
    return choice;
  }
  if (!declared.some((d) => d.name === choice.name)) {
    throw new ClientToolRefused(
      'invalid_tool_choice',
      `${param}: the tool "${choice.name.slice(0, 80)}" is not among the request's tools`,
      { param },
    );
  }
  return choice;
}

/** Why a tool's parameters are not a usable JSON Schema object, or undefined. */
function schemaProblem(schema: unknown): string | undefined {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return 'it must be an object';
  const type = (schema as { type?: unknown }).type;
  if (type !== undefined && type !== 'object') return 'the arguments are an object: "type" must be "object"';
  const ajv = compilerFor(schema);
  if (typeof ajv === 'string') return ajv;
  try {
    ajv.compile(schema);
    return undefined;
  } catch (err) {
    return (err as Error).message.slice(0, 300);
  }
}

/** An answer that was not taken, as the refusal every protocol maps; undefined when it was. */
export function answerRefusal(outcome: AnswerOutcome): ClientToolRefused | undefined {
  const list = (ids: string[]) => ids.join(', ');
  switch (outcome.kind) {
    case 'answered':
    case 'replayed':
      return undefined;
    case 'unknown':
      return new ClientToolRefused(
        'unknown_call',
        `no client tool call of a waiting turn has the id ${list(outcome.callIds)}`,
        { callIds: outcome.callIds },
      );
    case 'missing':
      return new ClientToolRefused(
        'missing_call',
        `the turn also waits for ${list(outcome.callIds)}: send the results of all its client tool calls together`,
        { callIds: outcome.callIds },
      );
    case 'several_turns':
      return new ClientToolRefused(
        'several_turns',
        `the calls ${list(outcome.callIds)} belong to different turns: answer one turn's calls at a time`,
        { callIds: outcome.callIds },
      );
    case 'conflict': {
      const why = {
        answered_otherwise: 'was answered before with a different output',
        expired: 'waited too long and expired: the turn ended with client_tool_timeout',
        cancelled: 'was cancelled with its turn',
        turn_not_waiting: 'belongs to a turn that no longer waits for it',
      }[outcome.why];
      return new ClientToolRefused(outcome.why, `the call ${list(outcome.callIds)} ${why}`, {
        callIds: outcome.callIds,
      });
    }
  }
}
