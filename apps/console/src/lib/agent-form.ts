/**
 * The agent form's pure logic: an agent (as the API answers it) as form fields, the fields as the
 * request body of POST /v1/agents or PATCH /v1/agents/:id, and the API's validation issues by field.
 * The console does not validate beyond shapes (a number field that is not a number is sent as given):
 * the API is the one judge, and its errors are shown next to the fields they name.
 */

export const BUDGET_FIELDS = [
  'maxIterations',
  'maxToolCalls',
  'maxUsd',
  'deadlineMs',
  'maxReflections',
] as const;
export type BudgetField = (typeof BUDGET_FIELDS)[number];

export interface AgentFields {
  name: string;
  archetype: string;
  tier: string;
  instructions: string;
  model: string;
  /** Lists as text: one entry per line (or separated by commas). */
  fallbackModels: string;
  tools: string;
  approvalRequired: string;
  allowedSubagents: string;
  budgets: Record<BudgetField, string>;
  toolResultCompression: string;
  archivistMode: string;
  archivistAfterTurns: string;
  archivistIdleMs: string;
  /** `<provider>/<model>` (docs/adr/0049); blank: none (tool selection uses the built-in default). */
  embedder: string;
  /** Semantic tool selection (docs/adr/0049): most tools offered per round; blank: every tool. */
  toolSelectionMaxPerTurn: string;
  /** Tools always offered, one per line. */
  toolSelectionPinned: string;
}

/**
 * Embedders to suggest (the API lists none: it refuses an unknown one with 400 and names the
 * available kinds, shown by the field): the built-in ones and OpenAI's priced models.
 */
export const SUGGESTED_EMBEDDERS = [
  'local/words-100d',
  'local/hash-256',
  'openai/text-embedding-3-small',
  'openai/text-embedding-3-large',
  'openai/text-embedding-ada-002',
] as const;

/** The subset of the API's Agent the form edits. */
export interface AgentLike {
  name: string;
  archetype?: string;
  tier?: string;
  instructions?: string;
  model?: string;
  fallbackModels?: string[];
  tools?: string[];
  approvalRequired?: string[];
  allowedSubagents?: string[];
  budgets?: Partial<Record<BudgetField, number>>;
  toolResultCompression?: string;
  archivist?: { mode?: string; afterTurns?: number; idleMs?: number };
  embedder?: string | null;
  toolSelection?: { maxPerTurn?: number; pinned?: string[] };
}

const text = (n: number | undefined) => (n === undefined ? '' : String(n));

export function emptyFields(): AgentFields {
  return {
    name: '',
    archetype: '',
    tier: '',
    instructions: '',
    model: '',
    fallbackModels: '',
    tools: '',
    approvalRequired: '',
    allowedSubagents: '',
    budgets: { maxIterations: '', maxToolCalls: '', maxUsd: '', deadlineMs: '', maxReflections: '' },
    toolResultCompression: '',
    archivistMode: '',
    archivistAfterTurns: '',
    archivistIdleMs: '',
    embedder: '',
    toolSelectionMaxPerTurn: '',
    toolSelectionPinned: '',
  };
}

export function fieldsOf(a: AgentLike): AgentFields {
  const b = a.budgets ?? {};
  return {
    name: a.name,
    archetype: a.archetype ?? '',
    tier: a.tier ?? '',
    instructions: a.instructions ?? '',
    model: a.model ?? '',
    fallbackModels: (a.fallbackModels ?? []).join('\n'),
    tools: (a.tools ?? []).join('\n'),
    approvalRequired: (a.approvalRequired ?? []).join('\n'),
    allowedSubagents: (a.allowedSubagents ?? []).join('\n'),
    budgets: {
      maxIterations: text(b.maxIterations),
      maxToolCalls: text(b.maxToolCalls),
      maxUsd: text(b.maxUsd),
      deadlineMs: text(b.deadlineMs),
      maxReflections: text(b.maxReflections),
    },
    toolResultCompression: a.toolResultCompression ?? '',
    archivistMode: a.archivist?.mode ?? '',
    archivistAfterTurns: text(a.archivist?.afterTurns),
    archivistIdleMs: text(a.archivist?.idleMs),
    embedder: a.embedder ?? '',
    toolSelectionMaxPerTurn: text(a.toolSelection?.maxPerTurn),
    toolSelectionPinned: (a.toolSelection?.pinned ?? []).join('\n'),
  };
}

/** A list field's entries: split on lines and commas, trimmed, empty ones dropped. */
export function listOf(s: string): string[] {
  return s
    .split(/[\n,]/)
    .map((x) => x.trim())
    .filter(Boolean);
}

/** A number as the user typed it: a number when it is one, else the text (the API says what is wrong). */
function numberOf(s: string): number | string | undefined {
  const t = s.trim();
  if (t === '') return undefined;
  const n = Number(t);
  return Number.isFinite(n) ? n : t;
}

function compact<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Every field the form holds, as the API's request fields; blank optional fields are left out. */
export function bodyOf(f: AgentFields): Record<string, unknown> {
  const budgets = compact(Object.fromEntries(BUDGET_FIELDS.map((k) => [k, numberOf(f.budgets[k])])));
  const archivist = compact({
    mode: f.archivistMode || undefined,
    afterTurns: numberOf(f.archivistAfterTurns),
    idleMs: numberOf(f.archivistIdleMs),
  });
  const pinned = listOf(f.toolSelectionPinned);
  const toolSelection = compact({
    maxPerTurn: numberOf(f.toolSelectionMaxPerTurn),
    pinned: pinned.length > 0 ? pinned : undefined,
  });
  return compact({
    // The name is sent as typed (even blank): the API refuses a blank name, and says so by the field.
    name: f.name,
    archetype: f.archetype.trim() || undefined,
    tier: f.tier || undefined,
    instructions: f.instructions,
    model: f.model.trim() || undefined,
    fallbackModels: listOf(f.fallbackModels),
    tools: listOf(f.tools),
    approvalRequired: listOf(f.approvalRequired),
    allowedSubagents: listOf(f.allowedSubagents),
    budgets,
    toolResultCompression: f.toolResultCompression || undefined,
    archivist,
    toolSelection,
    embedder: f.embedder.trim() || undefined,
  });
}

/** A new agent: blank lists and empty objects are not worth sending (the API's defaults apply). */
export function createBody(f: AgentFields): Record<string, unknown> {
  const body = bodyOf(f);
  for (const [k, v] of Object.entries(body)) {
    if (k === 'name') continue;
    const blank =
      (Array.isArray(v) && v.length === 0) ||
      v === '' ||
      (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0);
    if (blank) delete body[k];
  }
  return body;
}

/** An edit: only what changed from the agent as loaded (a PATCH with nothing in it is refused). */
export function patchBody(before: AgentFields, after: AgentFields): Record<string, unknown> {
  const a = bodyOf(before);
  const b = bodyOf(after);
  const patch: Record<string, unknown> = {};
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (JSON.stringify(a[key]) === JSON.stringify(b[key])) continue;
    // A field cleared in the form: lists and objects are sent empty; scalars cannot be unset.
    if (b[key] !== undefined) patch[key] = b[key];
    else if (Array.isArray(a[key])) patch[key] = [];
    else if (typeof a[key] === 'object') patch[key] = {};
  }
  return patch;
}

export interface Issue {
  path: string;
  message: string;
  /** For an unknown tool: the names the API offers. */
  available?: string[];
}

/** The issues of a validation error's details (`{issues: [{path, message}]}`), any other shape ignored. */
export function issuesOf(details: unknown): Issue[] {
  const issues = (details as { issues?: unknown } | null | undefined)?.issues;
  if (!Array.isArray(issues)) return [];
  return issues.flatMap((i: unknown) => {
    const o = i as { path?: unknown; message?: unknown; available?: unknown };
    if (typeof o?.message !== 'string') return [];
    const path = Array.isArray(o.path) ? o.path.join('.') : typeof o.path === 'string' ? o.path : '';
    const available = Array.isArray(o.available)
      ? o.available.filter((x): x is string => typeof x === 'string')
      : undefined;
    return [{ path, message: o.message, ...(available ? { available } : {}) }];
  });
}

/**
 * The form field an issue's path belongs to: `fallbackModels.1` → `fallbackModels`,
 * `budgets.maxUsd` → `budgets.maxUsd`, `archivist.idleMs` → `archivist.idleMs`,
 * `toolSelection.pinned.0` → `toolSelection.pinned`; '' for the body.
 */
export function fieldOf(path: string): string {
  const parts = path.split('.').filter(Boolean);
  if (parts.length === 0) return '';
  if ((parts[0] === 'budgets' || parts[0] === 'archivist' || parts[0] === 'toolSelection') && parts[1])
    return `${parts[0]}.${parts[1]}`;
  return parts[0];
}

/** Issues grouped by the field they name. */
export function issuesByField(details: unknown): Map<string, Issue[]> {
  const byField = new Map<string, Issue[]>();
  for (const issue of issuesOf(details)) {
    const key = fieldOf(issue.path);
    byField.set(key, [...(byField.get(key) ?? []), issue]);
  }
  return byField;
}
