import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { createPool, migrateAll, Pool, startEmbeddedPostgres } from '../../libs/db';

/**
 * A fresh migrated database for one benchmark run: on the server at DATABASE_URL if given, else on
 * an embedded PostgreSQL in a temp directory (stopped and removed by `close`).
 */
export async function benchDatabase(): Promise<{ url: string; pool: Pool; close(): Promise<void> }> {
  let adminUrl = process.env.DATABASE_URL;
  let stopServer = (): Promise<void> => Promise.resolve();
  let dir: string | undefined;
  if (!adminUrl) {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tg-relay-bench-'));
    fs.chmodSync(dir, 0o755);
    const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg') });
    adminUrl = pg.url;
    stopServer = pg.stop;
  }
  const name = `bench_${crypto.randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database "${name}"`);
  await admin.end();
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  const url = u.toString();
  await migrateAll(url);
  // bench setup bulk-loads millions of rows: no statement or lock limit on this pool
  const pool = createPool(url, { max: 10, applicationName: 'tg-relay:bench', timeouts: { statementMs: 0, lockMs: 0 } });
  return {
    url,
    pool,
    close: async () => {
      await pool.end();
      const c = new Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`drop database if exists "${name}" with (force)`);
      await c.end();
      await stopServer();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
