import { createBody, emptyFields, fieldsOf, issuesByField, listOf, patchBody } from './agent-form';

describe('agent form', () => {
  const agent = {
    name: 'helper',
    archetype: 'assistant',
    tier: 'chat',
    instructions: 'Be brief.',
    model: 'openai-chat/gpt-4o-mini',
    fallbackModels: ['anthropic/claude-3-5-haiku'],
    tools: ['http_fetch', 'memory_search'],
    approvalRequired: ['http_fetch'],
    allowedSubagents: [],
    budgets: { maxUsd: 0.5, maxIterations: 8 },
    toolResultCompression: 'auto',
    archivist: {},
  };

  it('splits list fields on lines and commas', () => {
    expect(listOf(' a,\nb \n\n, c ')).toEqual(['a', 'b', 'c']);
  });

  it('creates with what was filled in only (the API defaults the rest)', () => {
    const f = {
      ...emptyFields(),
      name: 'n',
      tools: 'x\ny',
      budgets: { ...emptyFields().budgets, maxUsd: '2' },
    };
    expect(createBody(f)).toEqual({ name: 'n', tools: ['x', 'y'], budgets: { maxUsd: 2 } });
  });

  it('sends a blank name and a non-number as typed, for the API to refuse by field', () => {
    const f = { ...emptyFields(), budgets: { ...emptyFields().budgets, maxUsd: 'lots' } };
    expect(createBody(f)).toEqual({ name: '', budgets: { maxUsd: 'lots' } });
  });

  it('patches only what changed; a cleared list is sent empty', () => {
    const before = fieldsOf(agent);
    expect(patchBody(before, before)).toEqual({});
    const after = { ...before, instructions: 'Be thorough.', approvalRequired: '' };
    expect(patchBody(before, after)).toEqual({ instructions: 'Be thorough.', approvalRequired: [] });
    const budgets = { ...before, budgets: { ...before.budgets, maxUsd: '' } };
    expect(patchBody(before, budgets)).toEqual({ budgets: { maxIterations: 8 } });
  });

  it('groups the API issues by form field', () => {
    const byField = issuesByField({
      issues: [
        { path: 'name', message: 'Too small' },
        { path: 'fallbackModels.1', message: 'bad model' },
        { path: 'budgets.maxUsd', message: 'expected number' },
        { path: 'tools', message: 'unknown tools: nope', available: ['http_fetch'] },
        { path: '', message: 'at least one field is required' },
        { nonsense: true },
      ],
    });
    expect([...byField.keys()]).toEqual(['name', 'fallbackModels', 'budgets.maxUsd', 'tools', '']);
    expect(byField.get('tools')).toEqual([
      { path: 'tools', message: 'unknown tools: nope', available: ['http_fetch'] },
    ]);
    expect(issuesByField(undefined).size).toBe(0);
  });

  it('edits the embedder and tool selection; a cleared selection is sent empty', () => {
    const before = fieldsOf({
      ...agent,
      embedder: null,
      toolSelection: { maxPerTurn: 4, pinned: ['http_fetch'] },
    });
    expect(before).toMatchObject({
      embedder: '',
      toolSelectionMaxPerTurn: '4',
      toolSelectionPinned: 'http_fetch',
    });
    expect(patchBody(before, { ...before, embedder: ' openai/text-embedding-3-small ' })).toEqual({
      embedder: 'openai/text-embedding-3-small',
    });
    expect(patchBody(before, { ...before, toolSelectionMaxPerTurn: 'many' })).toEqual({
      toolSelection: { maxPerTurn: 'many', pinned: ['http_fetch'] },
    });
    expect(patchBody(before, { ...before, toolSelectionMaxPerTurn: '', toolSelectionPinned: '' })).toEqual({
      toolSelection: {},
    });
    expect(createBody({ ...emptyFields(), name: 'n', embedder: 'local/hash-256' })).toEqual({
      name: 'n',
      embedder: 'local/hash-256',
    });
  });

  it('puts tool selection issues on their field', () => {
    const byField = issuesByField({
      issues: [
        { path: ['toolSelection', 'maxPerTurn'], message: 'Too big' },
        { path: 'toolSelection.pinned.2', message: 'bad name' },
        { path: 'embedder', message: 'unknown embedder: local/nope', available: ['local/words-100d'] },
      ],
    });
    expect([...byField.keys()]).toEqual(['toolSelection.maxPerTurn', 'toolSelection.pinned', 'embedder']);
  });
});
