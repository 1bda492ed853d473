/**
 * Runs `work` again while it fails with an error that leaves nothing done and may simply be run again
 * (`retryable` says which; it sees the attempt that failed, counted from 1), at most `attempts` times
 * in all, with a short random pause that grows with each attempt so that racing callers spread out.
 * The last error is thrown as it is.
 */
export async function retrying<T>(
  work: (attempt: number) => Promise<T>,
  options: { attempts: number; retryable: (error: unknown, attempt: number) => boolean },
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work(attempt);
    } catch (error) {
      if (attempt >= options.attempts || !options.retryable(error, attempt)) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt));
    }
  }
}
