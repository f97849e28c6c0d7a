/**
 * The pg-boss contract: what tg-relay touches in pg-boss's schema outside its public API
 * (libs/db/boss-contract.ts) exists, with those types, in the installed pg-boss — and the installed
 * package is the pinned release. Fails on a pg-boss upgrade until the list is re-checked.
 */
import fs from 'node:fs';
import path from 'node:path';
import { BOSS_CONTRACT } from '../../../libs/db/boss-contract';
import { BOSS_PACKAGE_VERSION, BOSS_SCHEMA, BOSS_SCHEMA_VERSION, installedBoss, Pool } from '../../../libs/db';
import { createMigratedDatabase } from '../../support/db';

let db: { url: string; pool: Pool; drop(): Promise<void> };
beforeAll(async () => {
  db = await createMigratedDatabase('bcon');
});
afterAll(async () => db.drop());

const ROOT = path.resolve(__dirname, '../../..');

/** Source files of the product (not tests/benches) that may name pg-boss's tables. */
function productSources(): { file: string; text: string }[] {
  const out: { file: string; text: string }[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(ts|sql)$/.test(e.name)) out.push({ file: path.relative(ROOT, p), text: fs.readFileSync(p, 'utf8') });
    }
  };
  for (const d of ['libs', 'apps', 'sql']) walk(path.join(ROOT, d));
  return out;
}

describe('pg-boss contract (pinned)', () => {
  it('the installed pg-boss is the release the contract and the version guard were written for', () => {
    const installed = installedBoss();
    expect(installed).toEqual({ version: BOSS_CONTRACT.packageVersion, schema: BOSS_CONTRACT.schemaVersion });
    expect({ version: BOSS_PACKAGE_VERSION, schema: BOSS_SCHEMA_VERSION }).toEqual(installed);
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    expect(pkg.dependencies['pg-boss']).toBe(BOSS_CONTRACT.packageVersion); // pinned exactly, no range
  });

  it('every column tg-relay uses directly exists with the type it assumes', async () => {
    const { rows } = await db.pool.query(
      `select table_name, column_name, case when data_type = 'USER-DEFINED' then udt_name else data_type end as type
         from information_schema.columns where table_schema = $1`,
      [BOSS_SCHEMA],
    );
    const actual = new Map(rows.map((r) => [`${r.table_name}.${r.column_name}`, r.type]));
    const expected = Object.entries(BOSS_CONTRACT.tables).flatMap(([t, cols]) => Object.entries(cols).map(([c, type]) => [`${t}.${c}`, type]));
    expect(expected.map(([k]) => [k, actual.get(k)])).toEqual(expected);
  });

  it('the job states keep their enum order', async () => {
    const { rows } = await db.pool.query(
      `select e.enumlabel from pg_enum e join pg_type t on t.oid = e.enumtypid join pg_namespace n on n.oid = t.typnamespace
        where n.nspname = $1 and t.typname = 'job_state' order by e.enumsortorder`,
      [BOSS_SCHEMA],
    );
    expect(rows.map((r) => r.enumlabel)).toEqual(BOSS_CONTRACT.jobStates);
  });

  it("the product names no pg-boss table or column outside the contract, and never pg-boss's default schema", () => {
    const tables = new Set<string>();
    for (const { file, text } of productSources()) {
      for (const m of text.matchAll(/(?:\$\{BOSS_SCHEMA\}|\$\{JOB\}|tg_relay_boss)\.?(\w*)/g)) {
        const t = m[0].startsWith('${JOB}') ? 'job' : m[1];
        if (t) tables.add(`${t} (${file})`);
      }
      // the old schema name appears only where the legacy move and its docs name it
      if (!/boss-schema\.ts$|boss\.ts$|database\.ts$|0004_outbound\.sql$/.test(file))
        expect({ file, pgboss: /\bpgboss\./.test(text) }).toEqual({ file, pgboss: false });
    }
    const names = [...tables].map((t) => t.split(' ')[0]);
    const allowed = [...Object.keys(BOSS_CONTRACT.tables), 'job_state', 'create_queue', 'delete_queue', '%I'];
    expect(names.filter((n) => !allowed.includes(n))).toEqual([]);
    expect(names).toEqual(expect.arrayContaining(['job', 'queue']));
  });
});
