import { renderReminder, workItemReminder } from './projection';
import type { WorkItemRow, WorkItemStore } from './store';

const item = (over: Partial<WorkItemRow> = {}): WorkItemRow => ({
  id: 'wi-1',
  tenantId: 't',
  agentId: 'a',
  position: '1',
  objective: 'Ship the  release\nnotes',
  state: 'open',
  planStatus: 'ready',
  plan: 'write, review, publish',
  todoList: [
    { text: 'write', state: 'completed' },
    { text: 'review', state: 'in_progress' },
    { text: 'publish', state: 'pending' },
  ],
  blockedBy: null,
  recheckAt: null,
  recheckConsumedAt: null,
  resultSummary: null,
  createdBy: 'operator',
  createdTurnId: null,
  closedBy: null,
  closedTurnId: null,
  createdAt: new Date(0),
  updatedAt: new Date(0),
  completedAt: null,
  current: true,
  ...over,
});

describe('the work-item progress reminder (seed 002)', () => {
  it('is built from the current item: objective, plan status, blocker, open todos only, plan', () => {
    const text = renderReminder(item({ blockedBy: 'waiting on legal' }), 9, 10_000);
    expect(text).toContain('9 model rounds have passed without a work-item update');
    expect(text).toContain('Current work item wi-1: Ship the release notes');
    expect(text).toContain('plan_status: ready');
    expect(text).toContain('blocked_by: waiting on legal');
    expect(text).toContain('[>] review');
    expect(text).toContain('[ ] publish');
    expect(text).not.toContain('write\n');
    expect(text).not.toContain('[x]');
    // It asks for an update only where something changed: it marks nothing by itself.
    expect(text).toContain('otherwise carry on without updating');
  });

  it('is bounded', () => {
    const text = renderReminder(item({ plan: 'p'.repeat(50_000) }), 9, 400);
    expect(text.length).toBeLessThanOrEqual(400);
    expect(text.endsWith('… [truncated]')).toBe(true);
  });

  it('reads the store only once the thresholds are met, and says nothing without an open current item', async () => {
    let reads = 0;
    let rows = [item()];
    const store = {
      forPrompt: async () => (reads++, rows),
    } as unknown as WorkItemStore;
    const remind = workItemReminder(store, { rounds: 8, cooldownRounds: 4, maxTokens: 400 });
    const q = { tenantId: 't', agentId: 'a', turnId: 'u' };
    expect(await remind({ ...q, staleRounds: 7, roundsSinceReminder: Infinity })).toBeNull();
    expect(await remind({ ...q, staleRounds: 9, roundsSinceReminder: 3 })).toBeNull();
    expect(reads).toBe(0);
    expect(await remind({ ...q, staleRounds: 8, roundsSinceReminder: Infinity })).toContain('wi-1');
    rows = [item({ current: false }), item({ id: 'wi-2', state: 'completed' })];
    expect(await remind({ ...q, staleRounds: 12, roundsSinceReminder: 4 })).toBeNull();
    expect(reads).toBe(2);
  });
});
