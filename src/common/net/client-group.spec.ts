import { describe, expect, it } from '@jest/globals';
import { clientGroup } from './address-lists.js';

describe('clientGroup: the address a client is counted by', () => {
  it.each([
    ['198.51.100.7', '198.51.100.7'],
    ['::ffff:198.51.100.7', '198.51.100.7'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:0DB8:0001:0002:ffff::1', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1:2:3:4', 'fe80:0:0:0::/64'],
    ['64:ff9b::198.51.100.7', '64:ff9b:0:0::/64'],
    ['unknown', 'unknown'],
  ])('%s → %s', (address, group) => {
    expect(clientGroup(address)).toBe(group);
  });
});
