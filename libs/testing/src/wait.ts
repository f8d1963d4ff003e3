/**
 * Waits until `probe` returns a value other than undefined, null or false (null: what an ORM's
 * `findFirst` answers for "no row yet"). For state that lives in another process or database,
 * where there is no event to subscribe to.
 */
export async function waitFor<T>(
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  options: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== null && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out waiting for ${options.what ?? 'condition'}${lastError ? `: ${(lastError as Error).message}` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 50));
  }
}
