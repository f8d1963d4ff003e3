import { formatUsd } from './money';

describe('formatUsd', () => {
  it.each([
    ['0.00020000', '$0.0002'],
    [0, '$0.0000'],
    ['42.5', '$42.5000'],
    [0.000037, '$0.000037'],
    ['0.00000728', '$0.0000073'],
    [-0.00005, '-$0.000050'],
    ['not a number', 'not a number'],
  ])('%p → %s', (usd, text) => expect(formatUsd(usd)).toBe(text));
});
