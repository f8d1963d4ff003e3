import { WORK_ITEM_TOOLS } from '@switchboard/contracts';
import type { WorkItemStore } from './store';
import { workItemTools } from './tools';

describe('workItemTools', () => {
  it('defines exactly the tools the work reminder counts as a work-item update (WORK_ITEM_TOOLS)', () => {
    const names = workItemTools({} as WorkItemStore).map((t) => t.name);
    expect([...names].sort()).toEqual([...WORK_ITEM_TOOLS].sort());
  });
});
