import type { Agent } from '@prisma/client';
import { newId } from '@switchboard/contracts';
import type { Db } from '@switchboard/database';

/**
 * The built-in archetypes every tenant has (seed 000 "Sub-agents - the orchestrator pattern",
 * docs/adr/0025-archetypes-and-tiers.md). A tenant overrides one by creating its own agent with the
 * same name; otherwise the archetype is materialised on first use as an agents row with
 * `built_in = true`, so a child turn has an agent id like any other turn.
 */

/** Cost / latency / depth-of-thought split between models (seed 000 "Spawn hierarchy and tiers"). */
export type Tier = 'chat' | 'reasoning' | 'worker';
export const TIERS: readonly Tier[] = ['chat', 'reasoning', 'worker'];

export interface Archetype {
  name: string;
  tier: Tier;
  description: string;
  /** The narrow system prompt a child of this archetype runs with. */
  instructions: string;
  /**
   * Tools by name. Only names this product defines; a tool that a worker does not register (e.g.
   * memory tools in a deployment without them) is simply not offered to the model.
   */
  tools: string[];
  /** A model route hint (`hint:<route>`), resolved per tenant at run time. */
  model: string;
}

/** A root turn has depth 0, its child 1, grandchild 2, great-grandchild 3; a spawn making depth 4 is refused. */
export const MAX_SPAWN_DEPTH = 3;

/** The sub-agent tools (libs/subagents, helper S2's part of issue 11). */
const DELEGATION = ['spawn_subagent', 'wait_subagent', 'steer_subagent', 'list_subagents', 'close_subagent'];
/** The memory tools (libs/memory, issue 13). */
const MEMORY = ['memory_search', 'memory_get'];

const leaf =
  'You are a sub-agent: you get one task from a parent agent and hand back one compact result. ' +
  'Do the task, then answer with the result only; no preamble, no transcript of your steps. ' +
  'If you cannot finish, say plainly what blocks you.';

export const ARCHETYPES: readonly Archetype[] = Object.freeze(
  [
    {
      name: 'orchestrator',
      tier: 'chat',
      description: 'The top-level agent: answers directly, uses a direct tool, or delegates to a specialist.',
      instructions:
        'You are the orchestrator, the agent the user talks to. Answer directly when you can. ' +
        'Delegate a task to a specialist sub-agent (spawn_subagent) when it needs several steps, research ' +
        'or a review; give the child a narrow, self-contained instruction. Relay a child\u2019s blockers to ' +
        'the user instead of spawning the same delegation again.',
      tools: [...DELEGATION, ...MEMORY, 'current_time'],
      model: 'hint:chat',
    },
    {
      name: 'planner',
      tier: 'reasoning',
      description: 'Multi-step decomposition: breaks a complex request into ordered sub-tasks.',
      instructions:
        'You are a planner. Break the task into a short ordered list of sub-tasks, delegate each to a ' +
        'worker sub-agent when it needs work, and hand back the plan with each step\u2019s outcome.',
      tools: [...DELEGATION, ...MEMORY],
      model: 'hint:reasoning',
    },
    {
      name: 'researcher',
      tier: 'worker',
      description: 'Web and document lookups, citation hunting.',
      instructions: `You are a researcher. Find the facts the task asks for and cite each source (URL or memory reference). ${leaf}`,
      tools: ['http_fetch', ...MEMORY, 'word_count'],
      model: 'hint:agentic',
    },
    {
      name: 'code_executor',
      tier: 'worker',
      description:
        'Writing and debugging code. There is no sandbox: this service never runs the code it writes; ' +
        'whoever uses the code runs it, on their own machine and at their own risk.',
      instructions: `You are a code specialist. Write or fix the code the task asks for and explain how to run it. There is no sandbox: you cannot run, test or execute anything, so never claim you ran the code or saw its output. ${leaf}`,
      tools: [],
      model: 'hint:coding',
    },
    {
      name: 'critic',
      tier: 'worker',
      description: 'Reviews and quality checks of another agent\u2019s output.',
      instructions: `You are a critic. Review what you are given against the task: list concrete problems, most serious first, and say whether it is acceptable. ${leaf}`,
      tools: [...MEMORY],
      model: 'hint:reasoning',
    },
    {
      name: 'summarizer',
      tier: 'worker',
      description: 'Compresses oversized content into what the caller needs.',
      instructions: `You are a summarizer. Compress the content to what the task needs, keeping names, numbers and identifiers exact. ${leaf}`,
      tools: [],
      model: 'hint:summarization',
    },
    {
      name: 'archivist',
      tier: 'worker',
      description: 'Memory distillation: what to persist, what to forget.',
      instructions: `You are an archivist. Decide which durable facts from the material are worth remembering and state each as one short sentence. ${leaf}`,
      tools: [...MEMORY],
      model: 'hint:summarization',
    },
    {
      name: 'tool_maker',
      tier: 'worker',
      description:
        'Writes small helper scripts when a capability is missing. There is no sandbox: this service ' +
        'never runs the scripts it writes, and they do not become tools; a person reviews and runs them.',
      instructions: `You are a tool maker. Write the smallest script or procedure that provides the missing capability, with its usage. There is no sandbox: you cannot run or test the script and it does not become one of your tools, so never claim it ran. ${leaf}`,
      tools: [],
      model: 'hint:coding',
    },
    {
      name: 'tools_agent',
      tier: 'worker',
      description: 'Generic specialist for tool-bound tasks.',
      instructions: `You are a tools specialist. Use your tools to carry out the task exactly; check each result before the next call. ${leaf}`,
      tools: ['http_fetch', 'word_count', 'current_time'],
      model: 'hint:agentic',
    },
    {
      name: 'integrations_agent',
      tier: 'worker',
      description:
        'Acts through one external integration (a tenant\u2019s MCP server tools, named on its own agent).',
      instructions: `You are an integrations specialist. Carry out the task through the integration\u2019s tools only. ${leaf}`,
      tools: ['http_fetch'],
      model: 'hint:agentic',
    },
    {
      name: 'trigger_triage',
      tier: 'worker',
      description: 'Classifies an incoming external event: drop, notify, react or run an agent.',
      instructions: `You are a triage agent. Classify the event as drop, notify, react or agent, with a one-line reason. ${leaf}`,
      tools: [],
      model: 'hint:burst',
    },
    {
      name: 'trigger_reactor',
      tier: 'worker',
      description: 'A lightweight reaction to a triaged event that needs no full orchestrator turn.',
      instructions: `You are a reactor. Do the one small action the triaged event calls for and report it. ${leaf}`,
      tools: ['http_fetch', 'current_time'],
      model: 'hint:burst',
    },
    {
      name: 'morning_briefing',
      tier: 'worker',
      description: 'A curated daily digest, usually run by a schedule.',
      instructions: `You write the morning briefing: the few things that matter today, most important first, each in one or two sentences. ${leaf}`,
      tools: [...MEMORY, 'http_fetch', 'current_time'],
      model: 'hint:chat',
    },
    {
      name: 'welcome',
      tier: 'chat',
      description: 'Onboarding: greets a new user and explains what the assistant can do.',
      instructions: 'You welcome a new user: say briefly what you can do and ask what they need first.',
      tools: [],
      model: 'hint:chat',
    },
    {
      name: 'help',
      tier: 'chat',
      description: 'Answers questions about how to use the assistant.',
      instructions: 'You answer questions about using this assistant, briefly and concretely.',
      tools: [],
      model: 'hint:chat',
    },
  ].map((a) => Object.freeze({ ...a, tools: Object.freeze(a.tools) as string[] }) as Archetype),
);

const byName = new Map(ARCHETYPES.map((a) => [a.name, a]));

/** Every tool an archetype names: product tools a worker registers even where the gateway does not. */
export const ARCHETYPE_TOOLS: ReadonlySet<string> = new Set(ARCHETYPES.flatMap((a) => a.tools));

/** The built-in archetype of that name, if any. */
export function archetype(name: string): Archetype | undefined {
  return byName.get(name);
}

/** Tier rules (seed 000): chat → reasoning | worker; reasoning → worker; worker → nothing. */
export function maySpawn(parent: Tier, child: Tier): boolean {
  if (parent === 'chat') return child === 'reasoning' || child === 'worker';
  if (parent === 'reasoning') return child === 'worker';
  return false;
}

export type AgentRow = Agent;

/**
 * The agent a sub-agent name means for a tenant: its own (non-deleted, not built-in) agent of that
 * name wins (the override); else the built-in archetype, materialised as an agents row with
 * `built_in = true`. Concurrent resolutions make one row (the partial unique index of migration
 * 20261124000500_archetypes); a row made by an older definition is brought up to date. Null when
 * the name is neither.
 */
export async function resolveSubagent(db: Db, tenantId: string, name: string): Promise<AgentRow | null> {
  const own = await db.agent.findFirst({
    where: { tenantId, name, builtIn: false, deletedAt: null },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
  });
  if (own) return own;
  const a = byName.get(name);
  if (!a) return null;
  const existing = await findBuiltIn(db, tenantId, name);
  if (existing && matches(existing, a)) return existing;
  if (!existing) {
    await db.$executeRaw`
      INSERT INTO agents (id, tenant_id, name, archetype, tier, instructions, model, tools, built_in, updated_at)
      VALUES (${newId()}::uuid, ${tenantId}::uuid, ${a.name}, ${a.name}, ${a.tier}, ${a.instructions},
              ${a.model}, ${[...a.tools]}::text[], true, now())
      ON CONFLICT (tenant_id, name) WHERE built_in AND deleted_at IS NULL DO NOTHING`;
    const row = await findBuiltIn(db, tenantId, name);
    if (row && matches(row, a)) return row;
  }
  // A row materialised from an older definition follows the code.
  const row = await findBuiltIn(db, tenantId, name);
  if (!row) return null;
  return db.agent.update({
    where: { id: row.id },
    data: {
      archetype: a.name,
      tier: a.tier,
      instructions: a.instructions,
      model: a.model,
      tools: [...a.tools],
    },
  });
}

function findBuiltIn(db: Db, tenantId: string, name: string) {
  return db.agent.findFirst({ where: { tenantId, name, builtIn: true, deletedAt: null } });
}

function matches(row: AgentRow, a: Archetype): boolean {
  return (
    row.archetype === a.name &&
    row.tier === a.tier &&
    row.instructions === a.instructions &&
    row.model === a.model &&
    row.tools.length === a.tools.length &&
    row.tools.every((t, i) => t === a.tools[i])
  );
}
