import { fieldText, formatWait, parseSetting } from './operator-form';

describe('parseSetting', () => {
  const cap = { min: 1, max: 100_000, integer: true, label: 'Concurrency cap' };

  it('reads an empty field as the default (null)', () => {
    expect(parseSetting('  ', cap)).toEqual({ ok: true, value: null });
  });

  it('reads a number within bounds', () => {
    expect(parseSetting(' 12 ', cap)).toEqual({ ok: true, value: 12 });
    expect(parseSetting('2.5', { min: 0.1, max: 100, label: 'Fair share' })).toEqual({
      ok: true,
      value: 2.5,
    });
  });

  it('names the field for what the API would refuse', () => {
    expect(parseSetting('abc', cap)).toEqual({ ok: false, error: 'Concurrency cap: not a number' });
    expect(parseSetting('1.5', cap)).toEqual({ ok: false, error: 'Concurrency cap: a whole number' });
    expect(parseSetting('0', cap)).toEqual({ ok: false, error: 'Concurrency cap: between 1 and 100000' });
  });
});

describe('fieldText', () => {
  it('shows the default as an empty field', () => {
    expect(fieldText(null)).toBe('');
    expect(fieldText(undefined)).toBe('');
    expect(fieldText(0)).toBe('0');
  });
});

describe('formatWait', () => {
  it('reads milliseconds as a person would', () => {
    expect(formatWait(null)).toBe('—');
    expect(formatWait(850)).toBe('850 ms');
    expect(formatWait(12_400)).toBe('12 s');
    expect(formatWait(185_000)).toBe('3 min 5 s');
    expect(formatWait(120_000)).toBe('2 min');
    expect(formatWait(7_800_000)).toBe('2 h 10 min');
  });
});
