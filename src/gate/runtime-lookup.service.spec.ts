import { describe, expect, it, jest } from '@jest/globals';
import { ChangeCounterGenerations } from '../common/cache/change-counter-generations.js';
import type { DomainsService } from '../domains/domains.service.js';
import type { LicenseEntity } from '../licenses/license.entity.js';
import type { LicensesService } from '../licenses/licenses.service.js';
import type { ProjectEntity } from '../projects/project.entity.js';
import type { ProjectsService } from '../projects/projects.service.js';
import { RuntimeLookupService } from './runtime-lookup.service.js';

const HASH = 'a'.repeat(64);

/**
 * The features' lookups over one project and one license. `afterLicenseRead` runs once, right after license
 * read number `hookAt` answers: that is where a racing write (commit, then generation bump) lands.
 */
function world() {
  const license = {
    id: 1,
    project_id: 7,
    uuid_hash: HASH,
    revoked_at: null as Date | null,
    domain_id: null,
  } as LicenseEntity;
  const project = {
    id: 7,
    is_active: true,
    locked_at: null,
    default_redirect_url: null,
  } as unknown as ProjectEntity;
  const generations = new ChangeCounterGenerations();
  const state = {
    licenseReads: 0,
    hookAt: 1,
    afterLicenseRead: null as null | (() => Promise<void>),
    deleted: false,
  };
  /** What LicensesService calls with the key hash of each license it creates. */
  const keyCreated: ((hash: string) => void)[] = [];
  const read = async (hash: string) => {
    state.licenseReads++;
    if (hash !== license.uuid_hash) return null;
    const copy = { ...license };
    await new Promise((resolve) => setImmediate(resolve));
    if (state.licenseReads === state.hookAt) await state.afterLicenseRead?.();
    return copy;
  };
  const licenses = {
    byKeyHash: read,
    projectOfKey: async (hash: string) => (await read(hash))?.project_id ?? null,
    // license_tombstones: the deleted license's key and project
    projectOfDeletedKey: (hash: string) => Promise.resolve(state.deleted && hash === HASH ? 7 : null),
    onKeyCreated: (listener: (hash: string) => void) => void keyCreated.push(listener),
  } as unknown as LicensesService;
  const projects = {
    find: async () => ({ ...project }),
    redirectUrlOf: async () => null,
  } as unknown as ProjectsService;
  const domains = { active: async () => [], find: async () => null } as unknown as DomainsService;
  const lookup = new RuntimeLookupService(licenses, projects, domains, generations);
  /** A management write: the row changes and commits, then the project's generation is bumped. */
  const revoke = async () => {
    license.revoked_at = new Date();
    await generations.bump(7);
  };
  /** A management delete: the row goes, then the project's generation is bumped. */
  const remove = async () => {
    license.uuid_hash = 'deleted';
    state.deleted = true;
    await generations.bump(7);
  };
  return { lookup, state, revoke, remove, generations, license, keyCreated };
}

describe('RuntimeLookupService', () => {
  it('never keeps a license read before a write under the generation that write left', async () => {
    const { lookup, state, revoke } = world();
    // The revoke lands between the lookup's first license read and the rest of its load.
    state.afterLicenseRead = revoke;
    await lookup.byKeyHash(HASH);
    const next = lookup.peek(HASH) ?? (await lookup.byKeyHash(HASH));
    expect(next?.license.revoked_at).toBeInstanceOf(Date);
  });

  it('shares one load among concurrent calls for the same key', async () => {
    const { lookup, state } = world();
    const entries = await Promise.all(Array.from({ length: 20 }, () => lookup.byKeyHash(HASH)));
    expect(new Set(entries).size).toBe(1);
    expect(entries[0]?.license.id).toBe(1);
    expect(state.licenseReads).toBe(2); // once to learn the project, once after its generation
  });

  it('does not hand a call that joined a load the load’s entry when a write landed after the load began', async () => {
    const { lookup, state, revoke } = world();
    let joined: Promise<unknown> | undefined;
    // The first load has read everything (under the old generation) when a write commits, and only
    // then does the second call arrive, while the load is still under way.
    state.hookAt = 2;
    state.afterLicenseRead = async () => {
      await revoke();
      joined = lookup.byKeyHash(HASH);
    };
    const first = lookup.byKeyHash(HASH);
    expect((await first)?.license.revoked_at).toBeNull(); // it began before the write: either answer is right
    const second = (await joined) as Awaited<typeof first>;
    expect(second?.license.revoked_at).toBeInstanceOf(Date);
  });

  it('reads the database once for a key no license has, however often it is sent, also after a delete', async () => {
    const { lookup, state, remove } = world();
    const unknown = 'b'.repeat(64);
    expect(await Promise.all(Array.from({ length: 5 }, () => lookup.byKeyHash(unknown)))).toEqual(
      Array(5).fill(null),
    );
    expect(await lookup.byKeyHash(unknown)).toBeNull();
    expect(state.licenseReads).toBe(1);
    // A license that existed and was deleted: found until the delete, then gone for good.
    expect((await lookup.byKeyHash(HASH))?.license.id).toBe(1);
    await remove();
    const reads = state.licenseReads;
    expect(await lookup.byKeyHash(HASH)).toBeNull();
    expect(await lookup.byKeyHash(HASH)).toBeNull();
    expect(state.licenseReads).toBe(reads + 1);
    // The deleted license's key still names its project (for the analytics); a key never seen names none.
    expect(lookup.projectOf(HASH)).toBe(7);
    expect(lookup.projectOf(unknown)).toBeNull();
  });

  it('forgets a key believed absent as soon as a license with that key is created here', async () => {
    const { lookup, state, license, keyCreated } = world();
    const created = 'd'.repeat(64);
    expect(await lookup.byKeyHash(created)).toBeNull();
    expect(await lookup.byKeyHash(created)).toBeNull();
    expect(state.licenseReads).toBe(1);
    license.uuid_hash = created;
    for (const listener of keyCreated) listener(created);
    expect((await lookup.byKeyHash(created))?.license.id).toBe(1);
  });

  it('believes a key absent for a minute only: a row put into the table directly is found after it', async () => {
    const { lookup, state, license } = world();
    const imported = 'c'.repeat(64);
    let now = Date.now();
    const clock = jest.spyOn(Date, 'now').mockImplementation(() => now);
    try {
      expect(await lookup.byKeyHash(imported)).toBeNull();
      state.licenseReads = 0;
      now += 59_000;
      expect(await lookup.byKeyHash(imported)).toBeNull();
      expect(state.licenseReads).toBe(0);
      license.uuid_hash = imported; // the operator's import lands
      expect(await lookup.byKeyHash(imported)).toBeNull();
      expect(state.licenseReads).toBe(0);
      now += 2_000;
      expect((await lookup.byKeyHash(imported))?.license.id).toBe(1);
    } finally {
      clock.mockRestore();
    }
  });
});
