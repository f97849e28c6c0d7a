/** INGRESS=webhook against the sandbox (which delivers like Telegram: per chat in order, retries non-2xx). */
import crypto from 'node:crypto';
import { createBoss, freePort } from '../../../libs/db';
import { ingressHealth } from '../../../libs/ingress/health';
import { createWebhookIngress, WebhookIngress } from '../../../libs/ingress/webhook-ingress';
import type { BotApiSandbox } from '../../../libs/sandbox';
import { createBotApiClient } from '../../../libs/telegram';
import { createMigratedDatabase } from '../../support/db';
import { makeMessageUpdate } from '../../support/ingress-fixtures';
import {
  cursorOf,
  inboxCount,
  inboxUpdateIds,
  jobCounts,
  memoryLogger,
  newBotToken,
  startSandbox,
} from '../../support/ingress-harness';
import { waitFor } from '../../support/wait-for';

const SECRET = 'webhook-Secret_0123456789';
let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
const running: Array<{ stop(): Promise<void> }> = [];

beforeAll(async () => {
  db = await createMigratedDatabase('ingress_webhook');
  sandbox = await startSandbox({ webhookRetry: { baseMs: 50, capMs: 200, timeoutMs: 5000 } });
  await db.pool.query(`
    create table public.fail_inbox (bot_id text primary key);
    create function public.fail_inbox_trigger() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from public.fail_inbox f where f.bot_id = new.bot_id) then raise exception 'injected failure'; end if;
      return new;
    end $$;
    create trigger fail_inbox before insert on relay.inbox for each row execute function public.fail_inbox_trigger();`);
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
});
afterAll(async () => {
  await sandbox.stop();
  await db.drop();
});

async function startWebhook(
  token: string,
  botId: string,
  o: { decodePolicy?: 'stop' | 'quarantine'; owner?: string } = {},
) {
  const port = await freePort();
  const logs = memoryLogger();
  const api = createBotApiClient({ token, apiRoot: sandbox.url });
  const ingress: WebhookIngress = createWebhookIngress({
    pool: db.pool,
    boss: createBoss(db.url, { max: 1 }),
    api,
    botId,
    owner: o.owner ?? `wh-${crypto.randomBytes(3).toString('hex')}`,
    logger: logs.logger,
    leaseTtlMs: 2000,
    pollTimeoutMs: 500,
    decodePolicy: o.decodePolicy ?? 'stop',
    allowedChatIds: [],
    secret: SECRET,
    publicUrl: `http://127.0.0.1:${port}/`,
    host: '127.0.0.1',
    port,
  });
  await ingress.start();
  const handle = {
    ingress,
    logs,
    url: `http://127.0.0.1:${port}/telegram/webhook/${botId}`,
    stop: async () => {
      await ingress.stop();
      api.close();
    },
  };
  running.push(handle);
  return handle;
}

const post = (url: string, body: string, secret: string | null = SECRET) =>
  fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(secret === null ? {} : { 'x-telegram-bot-api-secret-token': secret }),
    },
    body,
  });

describe('webhook ingress', () => {
  it('registers the webhook with its secret, and answers 2xx only after commit (failures are redelivered, then stored once)', async () => {
    const { token, botId } = newBotToken();
    const w = await startWebhook(token, botId);
    await waitFor(() => sandbox.webhookInfo(token).url === w.url, { what: 'webhook registered' });
    await waitFor(async () => (await ingressHealth(db.pool, botId, { pollTimeoutMs: 500 })).ready, {
      what: 'ready (registration confirmed)',
    });

    await db.pool.query('insert into public.fail_inbox values ($1)', [botId]);
    const chat = Number(botId);
    const ids = [1, 2, 3].map((i) => sandbox.injectMessage(token, { chatId: chat, text: `m${i}` }).update_id);
    await waitFor(
      () => (sandbox.webhookInfo(token).last_error_message ?? '') !== '' && sandbox.stats().webhook.failed >= 3,
      { what: 'failed deliveries' },
    );
    expect(await inboxCount(db.pool, botId)).toBe(0);
    expect(sandbox.webhookInfo(token).pending_update_count).toBe(3); // not acknowledged: Telegram keeps them
    expect(w.logs.lines().some((l) => l.msg?.startsWith('webhook batch transaction failed') && l.level === 50)).toBe(
      true,
    );

    await db.pool.query('delete from public.fail_inbox where bot_id = $1', [botId]);
    await waitFor(
      async () => (await inboxCount(db.pool, botId)) === 3 && sandbox.webhookInfo(token).pending_update_count === 0,
      {
        what: 'delivered after the failure',
        timeoutMs: 10_000,
      },
    );
    expect(await inboxUpdateIds(db.pool, botId)).toEqual(ids);
    expect(await jobCounts(db.pool, botId)).toEqual({ dispatch: 3, capture: 3 });
    // a fresh bot's webhook cursor stays at the start of the stream (0): the webhook cursor moves only
    // from a known position over stored ids, so a switch to polling never confirms an update unseen
    expect((await cursorOf(db.pool, botId))?.nextOffset).toBe(0);
  });

  it('rejects a missing or wrong secret with 401 and stores nothing', async () => {
    const { token, botId } = newBotToken();
    const w = await startWebhook(token, botId);
    const body = JSON.stringify(makeMessageUpdate({ updateId: 5, chatId: Number(botId) }));
    expect((await post(w.url, body, null)).status).toBe(401);
    expect((await post(w.url, body, 'wrong')).status).toBe(401);
    expect((await post(w.url, body, SECRET.slice(0, -1))).status).toBe(401);
    expect(await inboxCount(db.pool, botId)).toBe(0);
  });

  it('absorbs a redelivered update with the inbox key (200 both times, stored once)', async () => {
    const { token, botId } = newBotToken();
    const w = await startWebhook(token, botId);
    await waitFor(async () => (await cursorOf(db.pool, botId))?.leaseOwner != null);
    const body = JSON.stringify(makeMessageUpdate({ updateId: 77, chatId: Number(botId) }));
    const r1 = await post(w.url, body);
    const r2 = await post(w.url, body);
    expect([r1.status, r2.status]).toEqual([200, 200]);
    expect(await r1.json()).toEqual({ ok: true });
    expect(await inboxUpdateIds(db.pool, botId)).toEqual([77]);
    expect(await jobCounts(db.pool, botId)).toEqual({ dispatch: 1, capture: 1 });
  });

  it('a standby replica answers 503 with Retry-After and commits nothing', async () => {
    const { token, botId } = newBotToken();
    await startWebhook(token, botId, { owner: 'first' });
    await waitFor(async () => (await cursorOf(db.pool, botId))?.leaseOwner === 'first');
    const standby = await startWebhook(token, botId, { owner: 'second' });
    const r = await post(standby.url, JSON.stringify(makeMessageUpdate({ updateId: 9, chatId: Number(botId) })));
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('1');
    expect(await inboxCount(db.pool, botId)).toBe(0);
  });

  it('decode policy: stop answers 500 and records why; quarantine stores the raw body and answers 200; a body that is no update is 400 under both', async () => {
    const { token, botId } = newBotToken();
    const bad = JSON.stringify({
      update_id: 12,
      message: { message_id: 1, date: 1, chat: { id: 'x', type: 'private' } },
    });
    const stop = await startWebhook(token, botId, { decodePolicy: 'stop' });
    await waitFor(async () => (await cursorOf(db.pool, botId))?.leaseOwner != null);
    expect((await post(stop.url, bad)).status).toBe(500);
    expect((await cursorOf(db.pool, botId))?.haltedReason).toMatch(
      /update_id 12 could not be decoded \(\$\.message\.chat\.id: expected an integer\)/,
    );
    expect(await inboxCount(db.pool, botId)).toBe(0);
    await stop.stop();
    running.splice(0);

    const q = await startWebhook(token, botId, { decodePolicy: 'quarantine' });
    await waitFor(async () => (await cursorOf(db.pool, botId))?.leaseOwner != null);
    expect((await post(q.url, bad)).status).toBe(200);
    expect((await post(q.url, 'not json at all')).status).toBe(400);
    const { rows } = await db.pool.query(
      `select update_id, convert_from(raw, 'UTF8') as raw, transport from relay.quarantine where bot_id = $1 order by id`,
      [botId],
    );
    expect(rows).toEqual([
      { update_id: '12', raw: bad, transport: 'webhook' },
      { update_id: null, raw: 'not json at all', transport: 'webhook' },
    ]);
    expect(q.logs.text()).not.toContain('not json at all');
  });
});
