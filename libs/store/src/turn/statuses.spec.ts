import { sql, sqlList } from '../sql';
import { ACTIVE, ENDED, HOLDS_SESSION, isNotCompleted, NOT_COMPLETED, UNFINISHED, WAITING } from './statuses';

describe('turn status lists', () => {
  it('are the sets the statements wrote out by hand, as constant text without parameters', () => {
    expect(UNFINISHED.toQuery()).toEqual({ text: "('queued', 'running')", values: [] });
    expect(WAITING.toQuery()).toEqual({
      text: "('awaiting_approval', 'awaiting_subagent', 'awaiting_client_tool')",
      values: [],
    });
    expect(HOLDS_SESSION.toQuery()).toEqual({
      text: "('queued', 'running', 'awaiting_approval', 'awaiting_subagent', 'awaiting_client_tool')",
      values: [],
    });
    expect(ACTIVE.toQuery()).toEqual({
      text: "('running', 'awaiting_approval', 'awaiting_subagent', 'awaiting_client_tool')",
      values: [],
    });
    expect(ENDED.toQuery()).toEqual({ text: "('completed', 'failed', 'cancelled')", values: [] });
    expect(NOT_COMPLETED.toQuery()).toEqual({ text: "('failed', 'cancelled')", values: [] });
    expect(['completed', 'failed', 'cancelled'].filter(isNotCompleted)).toEqual(['failed', 'cancelled']);
  });

  it('splice into a statement without shifting its parameters', () => {
    const q = sql`SELECT id FROM turns WHERE session_id = ${'s'} AND status IN ${ENDED} AND seq > ${3}`;
    expect(q.toQuery()).toEqual({
      text: "SELECT id FROM turns WHERE session_id = $1 AND status IN ('completed', 'failed', 'cancelled') AND seq > $2",
      values: ['s', 3],
    });
  });

  it('quote a literal as SQL does', () => {
    expect(sqlList(["it's"]).toQuery().text).toBe("('it''s')");
  });
});
