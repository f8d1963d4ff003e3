import { ArchivistModelNotes, archivistModels } from './archivist-models';

/** Which models the archivist asks, in order, and what one process remembers about them. */
describe('archivistModels', () => {
  it('asks only the tenant’s summarization route when it has one', () => {
    expect(
      archivistModels({ summarization: 'openai/gpt-4.1-mini' }, 'scripted/demo', 'anthropic/claude'),
    ).toEqual(['openai/gpt-4.1-mini']);
  });

  it('without a route, asks DEFAULT_MODEL, then the agent’s own model', () => {
    expect(archivistModels({}, 'scripted/demo', 'anthropic/claude')).toEqual([
      'scripted/demo',
      'anthropic/claude',
    ]);
    // A route that is a hint itself is not usable (as for the runner): the same as none.
    expect(archivistModels({ summarization: 'hint:chat' }, 'scripted/demo', 'openai/gpt')).toEqual([
      'scripted/demo',
      'openai/gpt',
    ]);
  });

  it('resolves the agent’s hint through the tenant’s routes and asks each model once', () => {
    expect(archivistModels({ coding: 'openai/gpt-coder' }, 'scripted/demo', 'hint:coding')).toEqual([
      'scripted/demo',
      'openai/gpt-coder',
    ]);
    expect(archivistModels({}, 'scripted/demo', 'hint:coding')).toEqual(['scripted/demo']);
    expect(archivistModels({}, 'openai/gpt', 'openai/gpt')).toEqual(['openai/gpt']);
    expect(archivistModels({}, 'openai/gpt', null)).toEqual(['openai/gpt']);
  });
});

describe('ArchivistModelNotes', () => {
  it('keeps a model unfit for a while, and says to warn about it once', () => {
    let now = 0;
    const notes = new ArchivistModelNotes(60_000, () => now);
    expect(notes.isUnfit('scripted/demo')).toBe(false);
    expect(notes.markUnfit('scripted/demo')).toBe(true);
    expect(notes.isUnfit('scripted/demo')).toBe(true);
    now = 60_001;
    // Asked again after the while; not warned about again.
    expect(notes.isUnfit('scripted/demo')).toBe(false);
    expect(notes.markUnfit('scripted/demo')).toBe(false);
    expect(notes.isUnfit('scripted/demo')).toBe(true);
  });

  it('says to warn each tenant once', () => {
    const notes = new ArchivistModelNotes();
    expect(notes.firstNoModelWarning('t1')).toBe(true);
    expect(notes.firstNoModelWarning('t1')).toBe(false);
    expect(notes.firstNoModelWarning('t2')).toBe(true);
  });
});
