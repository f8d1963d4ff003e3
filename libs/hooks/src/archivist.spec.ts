import { ARCHIVIST_FACT_MAX_CHARS, ARCHIVIST_MAX_FACTS, ARCHIVIST_PROMPT, parseFacts } from './archivist';

/** What the archivist accepts as its model's answer. */
describe('parseFacts', () => {
  it('accepts {facts: [...]}, a bare list, an empty list and a code fence', () => {
    const fact = { title: 'Deploy window', content: 'Tuesdays 14:00 UTC.' };
    expect(parseFacts(JSON.stringify({ facts: [fact] }))).toEqual({ ok: true, facts: [fact] });
    expect(parseFacts(JSON.stringify([fact]))).toEqual({ ok: true, facts: [fact] });
    expect(parseFacts('{"facts": []}')).toEqual({ ok: true, facts: [] });
    expect(parseFacts('```json\n{"facts": []}\n```')).toEqual({ ok: true, facts: [] });
  });

  it('trims and cuts over-long facts and lists instead of refusing them', () => {
    const many = Array.from({ length: 25 }, (_, i) => ({ title: ` t${i} `, content: 'c'.repeat(5000) }));
    const parsed = parseFacts(JSON.stringify({ facts: many }));
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.facts).toHaveLength(ARCHIVIST_MAX_FACTS);
    expect(parsed.facts[0].title).toBe('t0');
    expect(parsed.facts[0].content).toHaveLength(ARCHIVIST_FACT_MAX_CHARS);
  });

  it('keeps the preference mark, and refuses one that is not a boolean', () => {
    const pref = { title: 'Units', content: 'The user wants kilometres.', preference: true };
    expect(parseFacts(JSON.stringify({ facts: [pref] }))).toEqual({ ok: true, facts: [pref] });
    expect(parseFacts(JSON.stringify({ facts: [{ ...pref, preference: 'yes' }] }))).toMatchObject({
      ok: false,
    });
  });

  it('asks for the preference mark in its extraction contract', () => {
    expect(ARCHIVIST_PROMPT).toContain('"preference": true');
    expect(ARCHIVIST_PROMPT).toContain('"preference": false}]}');
  });

  it('refuses prose, the wrong shape and empty strings, saying why', () => {
    expect(parseFacts('Sure! Here are the facts.')).toEqual({ ok: false, error: 'the answer is not JSON' });
    expect(parseFacts('{"facts": "x"}')).toMatchObject({
      ok: false,
      error: expect.stringContaining('facts'),
    });
    expect(parseFacts('{"facts": [{"title": "", "content": "x"}]}')).toMatchObject({ ok: false });
    expect(parseFacts('{"facts": [{"title": "x"}]}')).toMatchObject({ ok: false });
    expect(parseFacts('null')).toMatchObject({ ok: false });
  });
});
