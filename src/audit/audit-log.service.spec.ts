import { describe, expect, it } from '@jest/globals';
import { Exclude } from 'class-transformer';
import { changesOf, MAX_CHANGES_BYTES, REDACTED, withinBound } from './audit-log.service.js';

class Row {
  id = 1;
  name = 'before';
  uuid: string | null = 'c0ffee00-0000-4000-8000-000000000000';
  content = 'the payload';
  meta: Record<string, unknown> = { plan: 'pro' };
  created_at = new Date('2026-01-01T00:00:00Z');
  updated_at = new Date('2026-01-01T00:00:00Z');
  @Exclude()
  user_id = 7;
}

const row = (fields: Partial<Row> = {}) => Object.assign(new Row(), fields);

describe('changesOf', () => {
  it('names only the fields that differ, as the API serialises them', () => {
    expect(changesOf(row(), row({ name: 'after', meta: { plan: 'pro' }, updated_at: new Date() }))).toEqual({
      name: ['before', 'after'],
    });
    expect(changesOf(row(), row({ meta: { plan: 'team' } }))).toEqual({
      meta: [{ plan: 'pro' }, { plan: 'team' }],
    });
  });

  it('shows a create as every set field from null, a delete as every field to null, hidden columns and payloads never', () => {
    expect(changesOf(null, row())).toEqual({
      name: [null, 'before'],
      uuid: [null, REDACTED],
      meta: [null, { plan: 'pro' }],
    });
    expect(changesOf(row(), null)).toEqual({
      name: ['before', null],
      uuid: [REDACTED, null],
      meta: [{ plan: 'pro' }, null],
    });
  });

  it('redacts credentials on both sides, and says when one was set or cleared', () => {
    expect(changesOf(row(), row({ uuid: 'another-key' }))).toEqual({ uuid: [REDACTED, REDACTED] });
    expect(changesOf(row(), row({ uuid: null }))).toEqual({ uuid: [REDACTED, null] });
  });

  it('adds what the rows cannot show: a secret stands unless it is null both sides, anything else only when it changed', () => {
    expect(changesOf(row(), row(), { secret: [REDACTED, REDACTED], reason: ['same', 'same'] })).toEqual({
      secret: [REDACTED, REDACTED],
    });
    expect(changesOf(row(), row(), { webhook_secret: [null, null], reason: [null, 'unpaid'] })).toEqual({
      reason: [null, 'unpaid'],
    });
    expect(changesOf(row(), row(), { webhook_secret: ['plain text', null] })).toEqual({
      webhook_secret: [REDACTED, null],
    });
  });
});

describe('withinBound', () => {
  it('leaves changes that fit as they are, and replaces the largest values first, until the whole fits', () => {
    expect(withinBound({ name: ['a', 'b'] })).toEqual({ name: ['a', 'b'] });
    const big = 'x'.repeat(MAX_CHANGES_BYTES / 2);
    const bounded = withinBound({ name: ['a', 'b'], meta: [{ big }, { big: `${big}y` }] });
    expect(bounded).toEqual({
      name: ['a', 'b'],
      meta: [{ big }, `[omitted: ${MAX_CHANGES_BYTES / 2 + 11} bytes, too large for the audit log]`],
    });
    expect(Buffer.byteLength(JSON.stringify(bounded))).toBeLessThanOrEqual(MAX_CHANGES_BYTES);
  });
});
