import { describe, expect, it } from '@jest/globals';
import { settingNames, settingsHelp, unknownSettings } from './settings-help.js';

describe('--help', () => {
  it('has one line a setting, from the schema: what it takes and its default', () => {
    const help = settingsHelp().split('\n');
    const lines = help.slice(1, -1);
    expect(lines).toHaveLength(settingNames().length);
    const line = (name: string) =>
      lines
        .find((l) => l.trim().startsWith(`${name} `))
        ?.trim()
        .replace(/\s+/g, ' ');
    expect(line('PORT')).toBe('PORT an integer from 0 to 65535 (default 3000)');
    expect(line('NODE_ENV')).toBe('NODE_ENV one of development, production, test (default development)');
    expect(line('DATABASE_URL')).toBe(
      'DATABASE_URL must be sqlite:<path> or mysql://user:pass@host:port/db (default sqlite:./data/licensegate.sqlite)',
    );
    expect(line('CONSOLE_ENABLED')).toBe('CONSOLE_ENABLED true or false (default true)');
    expect(line('APP_KEY')).toBe('APP_KEY text (unset)');
    expect(settingNames()).toEqual(expect.arrayContaining(['APP_KEY_FILE', 'REDIS_URL', 'PUBLIC_URL']));
  });
});

describe('unknown settings', () => {
  it('warns of a variable that looks like one of ours, naming the nearest setting', () => {
    expect(
      unknownSettings({
        DATABASE_PATH: 'x.sqlite',
        LG_PORT: '80',
        DATABASE_URL: 'sqlite:x',
        NODE_OPTIONS: '--inspect',
        HTTP_PROXY: 'http://proxy',
        HOME: '/root',
      }),
    ).toEqual([
      'DATABASE_PATH is not a setting LicenseGate reads (the nearest is DATABASE_URL); node dist/src/main.js --help lists them.',
      'LG_PORT is not a setting LicenseGate reads (the nearest is PORT); node dist/src/main.js --help lists them.',
    ]);
  });

  it('says nothing of the settings it reads', () => {
    expect(unknownSettings(Object.fromEntries(settingNames().map((n) => [n, 'x'])))).toEqual([]);
  });
});
