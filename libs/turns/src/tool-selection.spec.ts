import { DEFAULT_EMBEDDER } from '@switchboard/engine';
import { toolSelectionOf } from './turn-plan';

describe("an agent's tool selection as a turn runs it", () => {
  it("runs only with maxPerTurn, with the agent's embedder or the default", () => {
    expect(toolSelectionOf({}, null, ['a'])).toEqual({});
    expect(toolSelectionOf(null, 'openai/text-embedding-3-small', ['a'])).toEqual({});
    expect(toolSelectionOf({ maxPerTurn: 2 }, null, ['a'])).toEqual({
      toolSelection: { maxPerTurn: 2, pinned: [], embedder: DEFAULT_EMBEDDER },
    });
    expect(toolSelectionOf({ maxPerTurn: 2, pinned: ['a'] }, 'local/hash-256', ['a'])).toEqual({
      toolSelection: { maxPerTurn: 2, pinned: ['a'], embedder: 'local/hash-256' },
    });
  });

  it("pins TokenJuice's retrieve tool on top of maxPerTurn", () => {
    expect(toolSelectionOf({ maxPerTurn: 2, pinned: ['a'] }, null, ['a', 'tokenjuice_retrieve'])).toEqual({
      toolSelection: { maxPerTurn: 3, pinned: ['a', 'tokenjuice_retrieve'], embedder: DEFAULT_EMBEDDER },
    });
  });

  it('ignores a stored value that no longer parses (every tool offered)', () => {
    expect(toolSelectionOf({ maxPerTurn: 0 }, null, ['a'])).toEqual({});
    expect(toolSelectionOf('junk', null, ['a'])).toEqual({});
  });
});
