/** Resolves after `ms` of real time: for a pause that is itself under test (pacing a slow client). */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

type Falsy = false | 0 | '' | null | undefined;

/**
 * Polls `condition` (sync or async; a throw counts as "not yet") every 40 ms until it is truthy, and
 * returns it; after `timeoutMs` it throws, naming `what` and the last value or error seen.
 */
export async function waitFor<T>(
  condition: () => T | Falsy | Promise<T | Falsy>,
  timeoutMs = 20_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value;
      last = value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(
        `waitFor(${what}) timed out after ${timeoutMs} ms; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`,
      );
    await sleep(40);
  }
}
