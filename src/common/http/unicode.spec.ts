import { describe, expect, it } from '@jest/globals';
import { unpairedSurrogates } from './unicode.js';

const message = (field: string) =>
  `The ${field} field must be valid Unicode text (it contains an unpaired surrogate).`;

describe('unpairedSurrogates', () => {
  it('passes well-formed text, paired surrogates included, and values that are not text', () => {
    expect(
      unpairedSurrogates({
        a: 'plain',
        b: '😀 𝔘',
        c: ['ü', { d: '\ud83d\ude00' }],
        e: 1,
        f: null,
        g: true,
        h: new Date(0),
      }),
    ).toBeNull();
  });

  it('names each field by its path, in the order of the body', () => {
    expect(
      unpairedSurrogates({
        title: 'x\ud800',
        meta: { tags: ['ok', '\udc00'], deep: { x: 'a\udbffb' } },
        redirect_url: '\ud800',
      }),
    ).toEqual({
      title: [message('title')],
      'meta.tags.1': [message('meta.tags.1')],
      'meta.deep.x': [message('meta.deep.x')],
      redirect_url: [message('redirect url')],
    });
  });

  it('a half pair at either end of a string is unpaired too', () => {
    expect(unpairedSurrogates({ a: '\ude00\ud83d' })).toEqual({ a: [message('a')] });
  });

  it('keys: the path spells the unpaired unit as \\uXXXX', () => {
    expect(unpairedSurrogates({ meta: { ['k\ud800']: 1, ['😀']: 'fine' } })).toEqual({
      'meta.k\\ud800': [
        'The meta.k\\ud800 field name must be valid Unicode text (it contains an unpaired surrogate).',
      ],
    });
  });

  it('reports at most 20 fields, and walks a value nested 100000 deep without overflowing', () => {
    const many = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`f${i}`, '\ud800']));
    expect(Object.keys(unpairedSurrogates(many) ?? {})).toHaveLength(20);
    let deep: unknown = '\ud800';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(Object.values(unpairedSurrogates({ meta: deep }) ?? {})).toHaveLength(1);
  });
});
