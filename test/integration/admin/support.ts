import crypto from 'node:crypto';
import type { FastifyInstance, InjectOptions } from 'fastify';
import type { Pool } from 'pg';
import type { BossLedger } from '../../../libs/db/boss';
import { buildAdminApp, BuildAdminAppOptions } from '../../../libs/admin/app';
import { Config, loadConfig } from '../../../libs/config';
import { createBoss } from '../../../libs/db';
import { silentLogger } from '../../../libs/observability/logger';

export const TOKEN = 'test-admin-token-0123456789';
export const OPS_TOKEN = 'ops-token-abcdefghijklmnop';
export const AUTH = { authorization: `Bearer ${TOKEN}` };

export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({ ADMIN_TOKEN: TOKEN, ADMIN_TOKENS: `ops:${OPS_TOKEN}`, LOG_LEVEL: 'silent', ...env });
}

export async function startBoss(url: string): Promise<BossLedger> {
  const boss = createBoss(url, { max: 2, applicationName: 'tg-relay:test-admin' });
  await boss.start();
  return boss;
}

export async function buildTestApp(
  pool: Pool,
  boss: BossLedger,
  overrides: Partial<BuildAdminAppOptions> = {},
): Promise<FastifyInstance> {
  return buildAdminApp({
    pool,
    boss,
    config: testConfig(),
    logger: silentLogger(),
    instanceId: 'admin-test',
    ...overrides,
  });
}

/** app.inject with the admin token unless headers say otherwise. */
export function call(
  app: FastifyInstance,
  method: InjectOptions['method'],
  url: string,
  opts: { body?: unknown; headers?: Record<string, string> } = {},
) {
  return app.inject({
    method,
    url,
    headers: opts.headers ?? AUTH,
    ...(opts.body !== undefined ? { payload: opts.body as object } : {}),
  });
}

let seq = 0;
/** A capture row as the ingress would store it (fixture with overrides). */
export async function insertCapture(
  pool: Pool,
  o: Partial<{
    chat_id: number;
    state: string;
    last_error: string | null;
    failed_reason: string | null;
    created_at: string;
    attempts: number;
    update_id: number;
    started_at: string | null;
    worker_id: string | null;
  }> = {},
): Promise<number> {
  const updateId = o.update_id ?? 500_000 + ++seq;
  const chat = o.chat_id ?? 42;
  const payload = { update_id: updateId, chat_id: chat, text: 'hello' };
  const { rows } = await pool.query(
    `insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, text, payload, payload_sha256, state, attempts, last_error, failed_reason, created_at, started_at, worker_id)
     values ($1, '1000000001', $2, $3, $2, 'hello', $4, $5, $6, $7, $8, $9, coalesce($10::timestamptz, now()), $11, $12) returning id`,
    [
      `telegram:${updateId}:${chat}:${updateId}`,
      updateId,
      chat,
      JSON.stringify(payload),
      crypto.createHash('sha256').update(JSON.stringify(payload)).digest('hex'),
      o.state ?? 'pending',
      o.attempts ?? 0,
      o.last_error ?? null,
      o.failed_reason ?? null,
      o.created_at ?? null,
      o.started_at ?? null,
      o.worker_id ?? null,
    ],
  );
  return Number(rows[0].id);
}
