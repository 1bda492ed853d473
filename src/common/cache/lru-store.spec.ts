import { describe, expect, it } from '@jest/globals';
import { frozen, LruStore } from './lru-store.js';

/** A value whose JSON is exactly `length` characters long. */
const ofJsonLength = (length: number) => ({ s: 'x'.repeat(length - 8) }); // {"s":""} is 8

describe('LruStore', () => {
  it('counts an answer as 1.5 × its JSON, so that maxBytes bounds the heap its objects hold', () => {
    expect(JSON.stringify(ofJsonLength(100))).toHaveLength(100);
    const store = new LruStore(100, 300); // room for two answers of 150
    store.set('a', ofJsonLength(100));
    store.set('b', ofJsonLength(100));
    expect(store.has('a')).toBe(true);
    store.set('c', ofJsonLength(100));
    expect(store.has('a')).toBe(false);
    expect(store.has('b')).toBe(true);
    expect(store.has('c')).toBe(true);
  });

  it('keeps at most max answers, however small', () => {
    const store = new LruStore(2);
    for (const key of ['a', 'b', 'c']) store.set(key, { key });
    expect(['a', 'b', 'c'].map((key) => store.has(key))).toEqual([false, true, true]);
  });

  it('freezes an answer and everything in it, and leaves a Buffer as it is', () => {
    const buffer = Buffer.from('x');
    const answer = { data: [{ id: 1, created_at: new Date(0), tags: ['a'] }], raw: buffer };
    expect(frozen(answer)).toBe(answer);
    expect(Object.isFrozen(answer)).toBe(true);
    expect(Object.isFrozen(answer.data)).toBe(true);
    expect(Object.isFrozen(answer.data[0])).toBe(true);
    expect(Object.isFrozen(answer.data[0].tags)).toBe(true);
    expect(Object.isFrozen(buffer)).toBe(false);
    expect(() => {
      (answer.data[0] as { id: number }).id = 2;
    }).toThrow(TypeError);
  });
});
