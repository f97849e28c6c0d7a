import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../../libs/db/embedded';

/**
 * One PostgreSQL for the whole run: the server at DATABASE_URL if given, else an embedded one in a
 * fresh temp directory. Each test file then creates its own database (test/support/db.ts).
 */
export default async function globalSetup(): Promise<void> {
  if (process.env.DATABASE_URL) {
    process.env.TEST_ADMIN_DATABASE_URL = process.env.DATABASE_URL;
    return;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tg-relay-test-pg-'));
  fs.chmodSync(dir, 0o755);
  const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), relocatable: true });
  process.env.TEST_ADMIN_DATABASE_URL = pg.url;
  (globalThis as { __TG_RELAY_PG__?: unknown }).__TG_RELAY_PG__ = { pg, dir };
}
