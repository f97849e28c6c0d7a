/**
 * Switching INGRESS between polling and the webhook under traffic, against the sandbox (which
 * delivers webhooks like Telegram: per chat in order, a non-2xx retried, other chats going on), and
 * DECODE_POLICY=stop in webhook mode: the refused update's bytes are kept, and its halt ends with it.
 */
import crypto from 'node:crypto';
import { createBoss, freePort } from '../../../libs/db';
import { createWebhookIngress } from '../../../libs/ingress/webhook-ingress';
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
  startTestPoller,
} from '../../support/ingress-harness';
import { waitFor } from '../../support/wait-for';

const SECRET = 'switch-Secret_0123456789';
let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
const running: Array<{ stop(): Promise<void> }> = [];

beforeAll(async () => {
  db = await createMigratedDatabase('ingress_switch');
  sandbox = await startSandbox({ webhookRetry: { baseMs: 50, capMs: 200, timeoutMs: 5000 } });
  // one message text whose inbox insert fails (the database refusing it): its delivery is answered 500;
  // keyed by text so the failure is armed before the update exists (Telegram may deliver it at once)
  await db.pool.query(`
    create table public.fail_update (bot_id text, text text, primary key (bot_id, text));
    create function public.fail_update_trigger() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from public.fail_update f where f.bot_id = new.bot_id and f.text = new.payload #>> '{message,text}') then
        raise exception 'injected failure';
      end if;
      return new;
    end $$;
    create trigger fail_update before insert on relay.inbox for each row execute function public.fail_update_trigger();`);
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
});
afterAll(async () => {
  await sandbox.stop();
  await db.drop();
});

async function startWebhook(token: string, botId: string, decodePolicy: 'stop' | 'quarantine' = 'stop') {
  const port = await freePort();
  const logs = memoryLogger();
  const api = createBotApiClient({ token, apiRoot: sandbox.url });
  const ingress = createWebhookIngress({
    pool: db.pool,
    boss: createBoss(db.url, { max: 1 }),
    api,
    botId,
    owner: `wh-${crypto.randomBytes(3).toString('hex')}`,
    logger: logs.logger,
    leaseTtlMs: 2000,
    pollTimeoutMs: 500,
    decodePolicy,
    allowedChatIds: [],
    secret: SECRET,
    publicUrl: `http://127.0.0.1:${port}/`,
    host: '127.0.0.1',
    port,
  });
  await ingress.start();
  const handle = {
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

function startPoller(token: string, botId: string) {
  const p = startTestPoller({ pool: db.pool, url: db.url, apiRoot: sandbox.url, token, botId });
  running.push(p);
  return p;
}

/** Stops a running handle and forgets it (so afterEach does not stop it again). */
async function stopOne(h: { stop(): Promise<void> }): Promise<void> {
  running.splice(running.indexOf(h), 1);
  await h.stop();
}

const post = (url: string, body: string) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': SECRET },
    body,
  });

/** `n` messages spread over other chats than `chat` (the webhook delivers those past a failing one). */
function traffic(token: string, chat: number, n: number, tag: string): number[] {
  return Array.from(
    { length: n },
    (_, i) => sandbox.injectMessage(token, { chatId: chat + 1 + (i % 4), text: `${tag} ${i}` }).update_id,
  );
}

describe('ingress mode switches', () => {
  it('polling → webhook with an update answered 500 while later ones commit → polling: the gap is read, not confirmed unseen', async () => {
    const { token, botId } = newBotToken();
    const chat = Number(botId);

    // polling first: the cursor is a real offset
    const polled = traffic(token, chat, 5, 'polled');
    const poller = startPoller(token, botId);
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 5, { what: 'polled', timeoutMs: 30_000 });
    await stopOne(poller);

    // the webhook: the first update of this phase fails (500, Telegram retries it), the others commit
    const webhook = await startWebhook(token, botId);
    await waitFor(() => sandbox.webhookInfo(token).url === webhook.url, { what: 'webhook registered' });
    await db.pool.query('insert into public.fail_update values ($1, $2)', [botId, 'the gap']);
    const gap = sandbox.injectMessage(token, { chatId: chat, text: 'the gap' }).update_id;
    const afterGap = sandbox.injectMessage(token, { chatId: chat, text: 'same chat, after the gap' }).update_id;
    const delivered = traffic(token, chat, 12, 'webhook');
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 5 + delivered.length, {
      what: 'the other chats delivered past the failing update',
      timeoutMs: 30_000,
    });
    await waitFor(() => sandbox.stats().webhook.failed >= 2, { what: 'the gap answered 5xx (and retried)' });
    expect(await inboxUpdateIds(db.pool, botId)).not.toContain(gap);
    // the cursor does not pass what is not stored
    expect((await cursorOf(db.pool, botId))?.nextOffset).toBeLessThanOrEqual(gap);

    // switch back to polling while updates keep coming; the database accepts the gap again
    await stopOne(webhook);
    const during = traffic(token, chat, 6, 'during');
    await db.pool.query('delete from public.fail_update where bot_id = $1', [botId]);
    startPoller(token, botId);
    const later = traffic(token, chat, 6, 'later');
    const all = [...polled, gap, afterGap, ...delivered, ...during, ...later].sort((a, b) => a - b);
    await waitFor(async () => (await inboxCount(db.pool, botId)) === all.length && sandbox.pendingCount(token) === 0, {
      what: 'every update stored (the gap included) and confirmed',
      timeoutMs: 30_000,
    });
    expect(await inboxUpdateIds(db.pool, botId)).toEqual(all); // each once
    expect(await jobCounts(db.pool, botId)).toEqual({ dispatch: all.length, capture: all.length });
    expect(sandbox.webhookInfo(token).url).toBe(''); // the poller removed the webhook
  });

  it('DECODE_POLICY=stop (webhook): the refused bytes are kept before the 500, and the halt ends when its update is dealt with', async () => {
    const { token, botId } = newBotToken();
    const chat = Number(botId);
    const bad = JSON.stringify({
      update_id: 12,
      message: { message_id: 1, date: 1, chat: { id: 'x', type: 'private' } },
    });
    const good = (updateId: number) => JSON.stringify(makeMessageUpdate({ updateId, chatId: chat }));
    const w = await startWebhook(token, botId, 'stop');
    await waitFor(async () => (await cursorOf(db.pool, botId))?.leaseOwner != null, { what: 'lease' });

    expect((await post(w.url, bad)).status).toBe(500);
    expect((await post(w.url, bad)).status).toBe(500); // Telegram's redelivery: refused again, kept once
    const held = await db.pool.query<{ id: string; update_id: string; raw: string; state: string; error: string }>(
      `select id, update_id, convert_from(raw, 'UTF8') as raw, state, error from relay.quarantine where bot_id = $1`,
      [botId],
    );
    expect(held.rows).toHaveLength(1);
    expect(held.rows[0]).toMatchObject({ update_id: '12', raw: bad, state: 'quarantined' });
    expect(held.rows[0].error).toMatch(/DECODE_POLICY=stop/);
    expect((await cursorOf(db.pool, botId))?.haltedReason).toMatch(/update_id 12 could not be decoded/);

    // other updates go on; the refused one is still unresolved, so the halt stays
    expect((await post(w.url, good(13))).status).toBe(200);
    expect((await cursorOf(db.pool, botId))?.haltedReason).toMatch(/update_id 12/);
    expect(await inboxUpdateIds(db.pool, botId)).toEqual([13]);

    // the operator discards the held update: the next commit clears the halt
    await db.pool.query(`update relay.quarantine set state = 'discarded', resolved_at = now() where id = $1`, [
      held.rows[0].id,
    ]);
    expect((await post(w.url, good(14))).status).toBe(200);
    const cursor = await cursorOf(db.pool, botId);
    expect(cursor?.haltedReason).toBeNull();
    expect(cursor?.haltedAt).toBeNull();
  });
});
