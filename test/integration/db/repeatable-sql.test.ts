/**
 * Repeatable SQL files (sql/functions/*.sql): applied after the numbered migrations, recorded with
 * their sha256 in relay.schema_repeatables, re-applied only when the file changed; safe with
 * concurrent migrators; a database migrated by the code before them (numbered files only) upgrades.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPool, listMigrations, listRepeatables, migrate, migrateAll, Pool, SQL_DIR } from '../../../libs/db';
import { createTestDatabase } from '../../support/db';

let tmp: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'repeatable-sql-'));
  fs.cpSync(SQL_DIR, tmp, { recursive: true });
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

const recorded = async (pool: Pool) =>
  (
    await pool.query<{ name: string; sha256: string; at: string }>(
      `select name, sha256, applied_at::text as at from relay.schema_repeatables order by name`,
    )
  ).rows;
const functionSource = async (pool: Pool, name: string) =>
  (
    await pool.query<{ src: string }>(
      `select prosrc as src from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'relay' and proname = $1`,
      [name],
    )
  ).rows.map((r) => r.src);

const allFunctions = async (pool: Pool) =>
  (
    await pool.query<{ def: string }>(
      `select pg_get_functiondef(p.oid) as def from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'relay' order by proname`,
    )
  ).rows.map((r) => r.def);

async function withDb<T>(fn: (pool: Pool, url: string) => Promise<T>): Promise<T> {
  const db = await createTestDatabase('rep');
  const pool = createPool(db.url, { max: 2 });
  try {
    return await fn(pool, db.url);
  } finally {
    await pool.end();
    await db.drop();
  }
}

describe('repeatable SQL functions', () => {
  it('every SQL function of relay lives in exactly one repeatable file, and numbered files hold no function the repeatables lack', () => {
    const files = listRepeatables().map((r) => r.name);
    expect(files.length).toBeGreaterThanOrEqual(12);
    const defined = new Set<string>();
    for (const m of listMigrations()) {
      for (const f of fs.readFileSync(m.file, 'utf8').matchAll(/create or replace function relay\.(\w+)/g))
        defined.add(f[1]);
    }
    for (const r of listRepeatables()) {
      const names = [...fs.readFileSync(r.file, 'utf8').matchAll(/create or replace function relay\.(\w+)/g)].map(
        (f) => f[1],
      );
      expect({ file: r.name, names }).toEqual({ file: r.name, names: [r.name.replace(/\.sql$/, '')] }); // one per file, named after it
    }
    expect([...defined].filter((f) => !files.includes(`${f}.sql`))).toEqual([]);
  });

  it('a fresh database gets every file once; re-running is a no-op', async () => {
    await withDb(async (pool) => {
      await migrate(pool, { dir: tmp });
      const first = await recorded(pool);
      expect(first.map((r) => [r.name, r.sha256])).toEqual(listRepeatables(tmp).map((r) => [r.name, r.sha256]));
      expect(await migrate(pool, { dir: tmp })).toEqual([]);
      expect(await recorded(pool)).toEqual(first); // applied_at unchanged: nothing re-ran
    });
  });

  it('changing one file re-applies that file only, with its new definition', async () => {
    await withDb(async (pool) => {
      await migrate(pool, { dir: tmp });
      const before = await recorded(pool);
      const file = path.join(tmp, 'functions', 'outbound_normalize_parse_mode.sql');
      fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('begin', 'begin\n  -- changed by the test'));
      await migrate(pool, { dir: tmp });
      const after = await recorded(pool);
      const changed = after.filter((r) => before.find((b) => b.name === r.name)?.at !== r.at).map((r) => r.name);
      expect(changed).toEqual(['outbound_normalize_parse_mode.sql']);
      expect((await functionSource(pool, 'outbound_normalize_parse_mode'))[0]).toContain('-- changed by the test');
      expect(after.find((r) => r.name === 'outbound_normalize_parse_mode.sql')?.sha256).toBe(
        listRepeatables(tmp).find((r) => r.name === 'outbound_normalize_parse_mode.sql')?.sha256,
      );
    });
  });

  it('a broken file fails the migration with its name and leaves the recorded checksum as it was', async () => {
    await withDb(async (pool) => {
      await migrate(pool, { dir: tmp });
      const before = await recorded(pool);
      fs.appendFileSync(path.join(tmp, 'functions', 'outbound_lock_chat.sql'), '\nselect no_such_function();\n');
      await expect(migrate(pool, { dir: tmp })).rejects.toMatchObject({
        code: 'RELAY_MIGRATION_FAILED',
        message: expect.stringContaining('functions/outbound_lock_chat.sql'),
      });
      expect(await recorded(pool)).toEqual(before);
    });
  });

  it('concurrent migrators apply each file once and all succeed', async () => {
    await withDb(async (_pool, url) => {
      const pools = [0, 1, 2, 3].map(() => createPool(url, { max: 1 }));
      try {
        await Promise.all(pools.map((p) => migrate(p, { dir: tmp })));
        const rows = await recorded(pools[0]);
        expect(rows.map((r) => r.name)).toEqual(listRepeatables(tmp).map((r) => r.name));
        expect(await functionSource(pools[0], 'outbound_upsert')).toHaveLength(1);
      } finally {
        await Promise.all(pools.map((p) => p.end()));
      }
    });
  });

  it('a database migrated by the code before repeatable files (numbered files only) upgrades cleanly', async () => {
    await withDb(async (pool, url) => {
      const old = fs.mkdtempSync(path.join(os.tmpdir(), 'old-sql-'));
      try {
        for (const m of listMigrations().filter((m) => m.version < 16))
          fs.copyFileSync(m.file, path.join(old, path.basename(m.file)));
        await migrate(pool, { dir: old });
        await expect(pool.query('select 1 from relay.schema_repeatables')).rejects.toMatchObject({ code: '42P01' });
        const before = await allFunctions(pool);
        await migrateAll(url); // the release with repeatable files, as `tg-relay migrate` runs it
        expect((await recorded(pool)).map((r) => r.name)).toEqual(listRepeatables().map((r) => r.name));
        // the upgraded database ends with exactly the functions of a fresh install, and keeps every one
        // the numbered files had defined
        const after = await allFunctions(pool);
        expect(after).toEqual(await withDb((fresh, freshUrl) => migrateAll(freshUrl).then(() => allFunctions(fresh))));
        const names = (defs: string[]) => defs.map((d) => /FUNCTION (\S+)\(/.exec(d)?.[1]);
        expect(names(after)).toEqual(expect.arrayContaining(names(before)));
        expect(after.length).toBe(listRepeatables().length);
        expect(
          (await pool.query(`select job_id from relay.enqueue_outbound('rep-old', '5', 'hi', bot_id => '1')`)).rows[0]
            .job_id,
        ).toBeTruthy();
      } finally {
        fs.rmSync(old, { recursive: true, force: true });
      }
    });
  });
});
