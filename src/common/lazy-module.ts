/**
 * Something loaded once, at its first use, not at start: a library (docs/benchmarks.md#the-soak-back-under-250-mb-2026-11-28),
 * an identity provider's configuration. Every caller shares one load; a load that failed is forgotten,
 * so the next use tries again instead of failing until a restart.
 */
export function loadedWhenUsed<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () =>
    (loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    }));
}
