import { Injectable } from '@nestjs/common';

const DAY_MS = 86_400_000;

/**
 * The current time, injected wherever a decision depends on it (grace periods, UTC days, schedulers)
 * so that tests move time instead of waiting for it (test/utils/clock.ts).
 */
@Injectable()
export class Clock {
  nowMs(): number {
    return Date.now();
  }

  now(): Date {
    return new Date(this.nowMs());
  }
}

/** The UTC day of `at` as YYYY-MM-DD. */
export function utcDay(at: Date | number): string {
  return new Date(at).toISOString().slice(0, 10);
}

/** The UTC day `at` falls in, as the [start, end) of its milliseconds and its YYYY-MM-DD. */
export function utcDaySpan(at: Date | number): { day: string; from: number; until: number } {
  const ms = typeof at === 'number' ? at : at.getTime();
  const from = ms - (ms % DAY_MS);
  return { day: utcDay(ms), from, until: from + DAY_MS };
}

/** The start of the UTC hour of `at`. */
export function utcHour(at: Date | number): Date {
  const ms = typeof at === 'number' ? at : at.getTime();
  return new Date(ms - (ms % 3_600_000));
}

/** Seconds until the next midnight UTC after `at` (at least 1), when daily allowances start again. */
export function secondsToUtcMidnight(at: Date | number): number {
  const ms = typeof at === 'number' ? at : at.getTime();
  return Math.max(1, Math.ceil((ms - (ms % DAY_MS) + DAY_MS - ms) / 1000));
}

/** `date` cut to whole seconds, as MySQL's DATETIME and SQLite keep it alike. */
export function wholeSecond(date: Date): Date;
export function wholeSecond(date: Date | null): Date | null;
export function wholeSecond(date: Date | null): Date | null {
  return date === null ? null : new Date(Math.floor(date.getTime() / 1000) * 1000);
}

/** 'YYYY-MM-DD HH:MM:SS' in UTC, as both databases compare datetimes. */
export function sqlDatetime(at: Date | number): string {
  return new Date(at).toISOString().slice(0, 19).replace('T', ' ');
}

/** `at` plus whole days. */
export function addDays(at: Date, days: number): Date {
  return new Date(at.getTime() + days * DAY_MS);
}
