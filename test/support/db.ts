import crypto from 'node:crypto';
import { Client } from 'pg';
import { createPool, migrateAll, Pool } from '../../libs/db';

/** The server chosen by global setup (embedded unless DATABASE_URL was given). */
export function adminUrl(): string {
  const url = process.env.TEST_ADMIN_DATABASE_URL;
  if (!url) throw new Error('TEST_ADMIN_DATABASE_URL is not set: run through jest (test/support/global-setup.ts)');
  return url;
}

export function urlFor(database: string): string {
  const u = new URL(adminUrl());
  u.pathname = `/${database}`;
  return u.toString();
}

/**
 * A fresh, empty database for one test file. Dropped in `drop()` unless KEEP_TEST_DATA is set, so a
 * failed test's data can be inspected.
 */
export async function createTestDatabase(prefix = 't'): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${crypto.randomBytes(5).toString('hex')}`.toLowerCase();
  const admin = new Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    await admin.query(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  return {
    name,
    url: urlFor(name),
    drop: async () => {
      if (process.env.KEEP_TEST_DATA) return;
      const c = new Client({ connectionString: adminUrl() });
      await c.connect();
      try {
        await c.query(`drop database if exists "${name}" with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** A migrated database (our schema + pg-boss) and a pool on it. */
export async function createMigratedDatabase(
  prefix = 't',
): Promise<{ name: string; url: string; pool: Pool; drop(): Promise<void> }> {
  const db = await createTestDatabase(prefix);
  await migrateAll(db.url);
  const pool = createPool(db.url, { max: 10, applicationName: 'tg-relay:test' });
  return {
    ...db,
    pool,
    drop: async () => {
      await pool.end();
      await db.drop();
    },
  };
}
