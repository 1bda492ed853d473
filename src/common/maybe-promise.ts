/**
 * A value now, or a promise of it later. The runtime check's steps answer at once when everything
 * they need is in memory (the common case: a warm license) and a promise only when they must wait
 * (a first load, a database write): payments/runtime-fast-path.ts then answers without a single
 * promise per call, and the same steps serve the routed call, where Nest awaits whatever they give.
 */
export type MaybePromise<T> = T | Promise<T>;

/** `next(value)`, at once when `value` is here; after it settles when it is a promise. */
export function then<T, R>(value: MaybePromise<T>, next: (value: T) => MaybePromise<R>): MaybePromise<R> {
  return value instanceof Promise ? value.then(next) : next(value);
}
