import {
  addDays,
  secondsToUtcMidnight,
  sqlDatetime,
  utcDay,
  utcDaySpan,
  utcHour,
  wholeSecond,
} from './time.js';

describe('time', () => {
  it('names the UTC day of a moment, whatever the local zone would say', () => {
    expect(utcDay(new Date('2026-03-01T23:59:59.999Z'))).toBe('2026-03-01');
    expect(utcDay(Date.parse('2026-03-02T00:00:00.000Z'))).toBe('2026-03-02');
  });

  it("spans the UTC day of a moment: its first millisecond, the next day's first, its name", () => {
    expect(utcDaySpan(new Date('2026-03-01T23:59:59.999Z'))).toEqual({
      day: '2026-03-01',
      from: Date.parse('2026-03-01T00:00:00.000Z'),
      until: Date.parse('2026-03-02T00:00:00.000Z'),
    });
    expect(utcDaySpan(Date.parse('2024-02-29T00:00:00.000Z')).day).toBe('2024-02-29');
  });

  it('cuts to the start of the UTC hour', () => {
    expect(utcHour(new Date('2026-03-01T13:59:59.999Z')).toISOString()).toBe('2026-03-01T13:00:00.000Z');
  });

  it('counts whole seconds to midnight UTC, at least one', () => {
    expect(secondsToUtcMidnight(new Date('2026-03-01T23:59:59.999Z'))).toBe(1);
    expect(secondsToUtcMidnight(new Date('2026-03-01T23:59:00.000Z'))).toBe(60);
    expect(secondsToUtcMidnight(new Date('2026-03-01T00:00:00.000Z'))).toBe(86_400);
    expect(secondsToUtcMidnight(new Date('2026-03-01T12:00:00.500Z'))).toBe(43_200);
  });

  it('cuts fractions of a second and keeps null', () => {
    expect(wholeSecond(new Date('2026-03-01T10:00:00.999Z')).toISOString()).toBe('2026-03-01T10:00:00.000Z');
    expect(wholeSecond(null)).toBeNull();
  });

  it('writes datetimes as both databases compare them, and adds days', () => {
    expect(sqlDatetime(new Date('2026-03-01T10:00:00.999Z'))).toBe('2026-03-01 10:00:00');
    expect(addDays(new Date('2026-02-28T10:00:00Z'), 3).toISOString()).toBe('2026-03-03T10:00:00.000Z');
  });
});
