import { ModelRef } from '@switchboard/contracts';
import { ARCHETYPES, archetype, MAX_SPAWN_DEPTH, maySpawn, TIERS } from './archetypes';

/** The tools this product defines: built-ins, memory (issue 13), delegation (issue 11). */
const KNOWN_TOOLS = new Set([
  'word_count',
  'current_time',
  'http_fetch',
  'memory_search',
  'memory_get',
  'spawn_subagent',
  'wait_subagent',
  'steer_subagent',
  'list_subagents',
  'close_subagent',
]);
const DELEGATION = ['spawn_subagent', 'wait_subagent', 'steer_subagent', 'list_subagents', 'close_subagent'];

describe('archetypes', () => {
  it('holds the seed 000 table, each name once', () => {
    const names = ARCHETYPES.map((a) => a.name);
    expect(new Set(names).size).toBe(names.length);
    for (const n of [
      'orchestrator',
      'planner',
      'researcher',
      'code_executor',
      'critic',
      'summarizer',
      'archivist',
      'tool_maker',
      'tools_agent',
      'integrations_agent',
      'trigger_triage',
      'trigger_reactor',
      'morning_briefing',
      'welcome',
      'help',
    ]) {
      expect(archetype(n)?.name).toBe(n);
    }
    expect(archetype('nope')).toBeUndefined();
  });

  it('gives each a tier, a prompt, a model route hint and only tools the product defines', () => {
    for (const a of ARCHETYPES) {
      expect(TIERS).toContain(a.tier);
      expect(a.instructions.length).toBeGreaterThan(20);
      expect(a.description.length).toBeGreaterThan(10);
      expect(a.model).toMatch(/^hint:/);
      expect(ModelRef.safeParse(a.model).success).toBe(true);
      for (const t of a.tools) expect(KNOWN_TOOLS).toContain(t);
    }
  });

  it('gives delegation tools only to tiers that may spawn', () => {
    for (const a of ARCHETYPES) {
      const delegates = a.tools.some((t) => DELEGATION.includes(t));
      if (a.tier === 'worker') expect(delegates).toBe(false);
    }
    expect(archetype('orchestrator')?.tier).toBe('chat');
    expect(archetype('planner')?.tier).toBe('reasoning');
    expect(archetype('researcher')?.tier).toBe('worker');
  });

  it('is frozen', () => {
    expect(() => (ARCHETYPES as unknown as unknown[]).push({})).toThrow();
    expect(() => archetype('critic')!.tools.push('http_fetch')).toThrow();
  });
});

describe('maySpawn', () => {
  it.each([
    ['chat', 'chat', false],
    ['chat', 'reasoning', true],
    ['chat', 'worker', true],
    ['reasoning', 'chat', false],
    ['reasoning', 'reasoning', false],
    ['reasoning', 'worker', true],
    ['worker', 'chat', false],
    ['worker', 'reasoning', false],
    ['worker', 'worker', false],
  ] as const)('%s → %s: %s', (parent, child, ok) => {
    expect(maySpawn(parent, child)).toBe(ok);
  });

  it('caps spawn depth at 3', () => {
    expect(MAX_SPAWN_DEPTH).toBe(3);
  });
});
