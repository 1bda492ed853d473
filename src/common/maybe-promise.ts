/**
 * A value now, or a promise of it later. The runtime check's steps answer at once when everything
 * they need is in memory (the common case: a warm license) and a promise only when they must wait
 * (a first load, a database write): the runtime route then answers without a single promise per
 * call, and the same steps serve the Nest route, where Nest awaits whatever they give.
 */
export type MaybePromise<T> = T | Promise<T>;

/**
 * `next(value)`, at once when `value` is here; after it settles when it is a promise. Not named
 * `then`: a module exporting `then` is itself thenable, and `await import()` of it would call it.
 */
export function andThen<T, R>(value: MaybePromise<T>, next: (value: T) => MaybePromise<R>): MaybePromise<R> {
  return value instanceof Promise ? value.then(next) : next(value);
}
