import { waitFor } from './wait';

describe('waitFor', () => {
  it('treats undefined, null and false as not yet, and resolves with the first other value', async () => {
    const answers: unknown[] = [undefined, null, false, 0];
    const value = await waitFor(() => answers.shift() as number | null | undefined | false, {
      intervalMs: 1,
    });
    expect(value).toBe(0);
    expect(answers).toEqual([]);
  });

  it('names what it waited for, with the last error, when time runs out', async () => {
    await expect(
      waitFor(
        () => {
          throw new Error('no row');
        },
        { timeoutMs: 20, intervalMs: 5, what: 'the row' },
      ),
    ).rejects.toThrow('timed out waiting for the row: no row');
  });
});
