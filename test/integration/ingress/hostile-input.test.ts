/**
 * Ingress: hostile content and broken peers never stop ingress.
 *   finding 1  — user text with `\u0000`-looking characters, a real NUL or a lone surrogate is
 *                stored exactly (raw json next to an escaped jsonb copy), dispatched to a real
 *                telegraf handler and captured to a real collector, under both decode policies,
 *                from unauthorized users too; a restarted poller does not halt; quarantine
 *                release of such an update works.
 *   finding 4  — a 2xx getUpdates answer that is not JSON (a proxy's HTML), a truncated body and an
 *                HTML 5xx page are retried with backoff, shown in the cursor, never a halt; a wrong
 *                API root (404) likewise.
 *   finding 8  — a webhook body that is not JSON or has no update_id: 400, recorded in quarantine,
 *                never a halt or a red readiness.
 *   finding 10 — quarantine rows record the transport, and the admin read API shows it.
 */
import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { BossLedger } from '../../../libs/db/boss';
import type { Message } from 'telegraf/types';
import { createBoss, freePort, withTransaction } from '../../../libs/db';
import { releaseQuarantinedUpdate } from '../../../libs/admin/quarantine-release';
import { deliverCapture } from '../../../libs/captures/deliver';
import { createDirectReplySink, createUpdateRunner, resolveBotHandlers, UpdateRunner } from '../../../libs/dispatch';
import { defineBot } from '../../../libs/dispatch/handlers-module';
import { inboxClaim } from '../../../libs/dispatch/queries';
import { QUEUES } from '../../../libs/db/boss';
import { ingressHealth } from '../../../libs/ingress/health';
import { createWebhookIngress } from '../../../libs/ingress/webhook-ingress';
import { BotApiSandbox, Collector, createCollector } from '../../../libs/sandbox';
import { createBotApiClient } from '../../../libs/telegram';
import { buildTestApp, call, startBoss } from '../admin/support';
import { createMigratedDatabase } from '../../support/db';
import {
  cursorOf,
  inboxCount,
  memoryLogger,
  newBotToken,
  startSandbox,
  startTestPoller,
  TestPoller,
} from '../../support/ingress-harness';
import { waitFor } from '../../support/wait-for';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
let collector: Collector;
const running: Array<{ stop(): Promise<void> }> = [];

beforeAll(async () => {
  db = await createMigratedDatabase('ingress_hostile');
  sandbox = await startSandbox({ webhookRetry: { baseMs: 50, capMs: 200, timeoutMs: 5000 } });
  collector = createCollector({ port: 0 });
  await collector.start();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
  sandbox.setFaults(null);
});
afterAll(async () => {
  await collector.stop();
  await sandbox.stop();
  await db.drop();
});

function poll(o: Partial<Parameters<typeof startTestPoller>[0]> & { token: string; botId: string }): TestPoller {
  const p = startTestPoller({ pool: db.pool, url: db.url, apiRoot: sandbox.url, ...o });
  running.push(p);
  return p;
}

/** What users type. Backslashes are real characters here: `C:\u0000dir` is six characters after `C:`. */
const HOSTILE = {
  escapeLookalike: 'see C:\\u0000dir',
  realNul: 'a\u0000b',
  loneSurrogate: 'cut \ud83d in half',
  mixed: '\u202e\\ud800 \u0000 \udc00 "q" \\\\u0000',
};
const TEXTS = Object.values(HOSTILE);

async function inboxExact(
  botId: string,
): Promise<Array<{ updateId: number; raw: unknown; payload: { message?: { text?: string } }; authorized: boolean }>> {
  const { rows } = await db.pool.query(
    `select update_id, raw::text as raw, payload::text as payload, authorized from relay.inbox where bot_id = $1 order by update_id`,
    [botId],
  );
  return rows.map((r) => ({
    updateId: Number(r.update_id),
    raw: JSON.parse(r.raw),
    payload: JSON.parse(r.payload),
    authorized: r.authorized,
  }));
}

async function runnerFor(token: string, botId: string, seen: string[]): Promise<UpdateRunner> {
  const runner = createUpdateRunner({
    token,
    botId,
    apiRoot: sandbox.url,
    handlers: resolveBotHandlers({
      register: defineBot(
        (bot) => void bot.on('message', (ctx) => void seen.push((ctx.message as Message.TextMessage).text)),
      ),
    }),
    replySink: createDirectReplySink(),
    logger: memoryLogger('silent').logger,
  });
  await runner.start();
  return runner;
}

/** Claims every pending inbox row of the bot as the dispatch worker does and hands it to telegraf. */
async function dispatchAll(botId: string, runner: UpdateRunner): Promise<number> {
  const { rows } = await inboxClaim(db.pool, {
    botId,
    limit: 100,
    workerId: 'test',
    now: null,
    ordered: false,
    queue: QUEUES.dispatch,
  });
  for (const r of rows) {
    const out = await runner.runUpdate(r.payload, { timeoutMs: 5_000 });
    expect(out.kind).toBe('handled');
  }
  return rows.length;
}

/** POSTs every capture of the bot to the collector as the capture worker does. */
async function deliverAll(botId: string): Promise<void> {
  const { rows } = await db.pool.query(
    `select id::text, capture_key, payload, payload_raw from relay.captures where bot_id = $1 order by id`,
    [botId],
  );
  for (const r of rows)
    expect((await deliverCapture(r, { url: collector.captureUrl, timeoutMs: 5_000 })).type).toBe('delivered');
}

describe('finding 1: user content never halts ingress and is kept exactly', () => {
  it.each(['stop', 'quarantine'] as const)(
    'DECODE_POLICY=%s: stored, dispatched and captured exactly, from allowed and unauthorized users; a restart does not halt',
    async (decodePolicy) => {
      const { token, botId } = newBotToken();
      const chat = Number(botId);
      const stranger = chat + 1;
      const sent = [
        ...TEXTS.map((text) => sandbox.injectMessage(token, { chatId: chat, text })),
        sandbox.injectMessage(token, { chatId: stranger, text: HOSTILE.realNul }),
        sandbox.injectMessage(token, { chatId: chat, text: 'plain' }),
      ];
      const p = poll({ token, botId, decodePolicy, allowedChatIds: [String(chat)] });
      await waitFor(async () => (await inboxCount(db.pool, botId)) === sent.length, { what: 'every update stored' });

      const cursor = await cursorOf(db.pool, botId);
      expect(cursor?.haltedReason).toBeNull();
      expect(cursor?.nextOffset).toBe(sent[sent.length - 1].update_id + 1);
      expect(
        (await db.pool.query('select count(*)::int n from relay.quarantine where bot_id = $1', [botId])).rows[0].n,
      ).toBe(0);

      const inbox = await inboxExact(botId);
      expect(inbox.map((r) => r.raw)).toEqual(sent); // the exact updates, NUL and lone surrogates included
      expect(inbox.map((r) => r.authorized)).toEqual([true, true, true, true, false, true]);
      expect(inbox[1].payload.message?.text).toBe('a\ufffdb'); // the jsonb copy: U+FFFD where jsonb cannot hold it
      expect(inbox[0].payload.message?.text).toBe(HOSTILE.escapeLookalike); // nothing to replace: exact

      // captures: exact document in payload_raw, readable copy in text/payload; none for the stranger
      const caps = (
        await db.pool.query(
          `select payload_raw::text as raw, text from relay.captures where bot_id = $1 order by update_id`,
          [botId],
        )
      ).rows;
      expect(caps.map((c) => JSON.parse(c.raw).text)).toEqual([...TEXTS, 'plain']);
      expect(caps[2].text).toBe('cut \ufffd in half');

      // dispatch: a real telegraf handler sees the exact text; capture: the collector receives it
      const seen: string[] = [];
      const runner = await runnerFor(token, botId, seen);
      expect(await dispatchAll(botId, runner)).toBe(5); // the stranger's update is stored handled, not dispatched
      expect(seen).toEqual([...TEXTS, 'plain']);
      await deliverAll(botId);
      const received = collector
        .received()
        .map((r) => r.body as { chat: { id: number }; update_id: number; text: string })
        .filter((b) => b.chat.id === chat)
        .sort((x, y) => x.update_id - y.update_id)
        .map((b) => b.text);
      expect(received).toEqual([...TEXTS, 'plain']);

      // a restart (new generation, same stored cursor) keeps going through more hostile text
      await p.stop();
      running.splice(running.indexOf(p), 1);
      const more = [
        sandbox.injectMessage(token, { chatId: chat, text: HOSTILE.mixed }),
        sandbox.injectMessage(token, { chatId: chat, text: 'after restart' }),
      ];
      const again = poll({ token, botId, decodePolicy, allowedChatIds: [String(chat)] });
      await waitFor(async () => (await inboxCount(db.pool, botId)) === sent.length + 2, {
        what: 'updates after the restart stored',
      });
      expect(again.poller.status().state).toBe('polling');
      expect((await cursorOf(db.pool, botId))?.haltedReason).toBeNull();
      expect((await inboxExact(botId)).slice(-2).map((r) => r.raw)).toEqual(more);
      expect(p.logs.text() + again.logs.text()).not.toContain('C:\\\\u0000dir');
    },
  );

  it('an update with a NUL quarantined by an older version is released through the admin API and kept exactly', async () => {
    const boss: BossLedger = await startBoss(db.url);
    const app: FastifyInstance = await buildTestApp(db.pool, boss);
    try {
      const update = {
        update_id: 9_100_001,
        message: {
          message_id: 3,
          date: 1_700_000_000,
          chat: { id: 9_100_001, type: 'private' },
          from: { id: 9_100_001, is_bot: false, first_name: 'A' },
          text: 'C:\\u0000dir \u0000 \ud800',
        },
      };
      const raw = JSON.stringify(update);
      const { rows } = await db.pool.query(
        `insert into relay.quarantine (bot_id, update_id, raw, sha256, error, json_path, generation) values ('1000000001', $1, $2, $3, '$: contains \\u0000, which PostgreSQL jsonb cannot store', '$', 1) returning id`,
        [update.update_id, Buffer.from(raw, 'utf8'), crypto.createHash('sha256').update(raw).digest('hex')],
      );
      const res = await call(app, 'POST', `/v1/quarantine/${rows[0].id}/release`, {
        body: { reason: 'content is data' },
      });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ state: 'released', outcome: 'persisted', update_id: update.update_id });
      const stored = (
        await db.pool.query(`select raw::text as raw from relay.inbox where update_id = $1`, [update.update_id])
      ).rows;
      expect(stored.map((r) => JSON.parse(r.raw))).toEqual([update]);
      const cap = (
        await db.pool.query(`select id, payload_raw::text as raw from relay.captures where update_id = $1`, [
          update.update_id,
        ])
      ).rows;
      expect(JSON.parse(cap[0].raw).text).toBe(update.message.text);
      // the admin read API shows the exact originals too
      const inboxDetail = await call(app, 'GET', `/v1/inbox/${res.json().inbox_id}`);
      expect(inboxDetail.json().payload).toEqual(update);
      const captureDetail = await call(app, 'GET', `/v1/captures/${cap[0].id}`);
      expect(captureDetail.json().payload.text).toBe(update.message.text);
    } finally {
      await app.close();
      await boss.stop({ graceful: false, wait: true });
    }
  });

  it('the release function itself re-decodes such bytes and stores them (no admin layer)', async () => {
    const boss = createBoss(db.url, { max: 1 });
    const update = { update_id: 9_100_002, callback_query: { id: 'x', from: { id: 9_100_002 }, data: '\u0000\udfff' } };
    const r = await withTransaction(db.pool, (client) =>
      releaseQuarantinedUpdate(
        client,
        boss,
        { bot_id: '1000000001', raw: Buffer.from(JSON.stringify(update)) },
        { allowedChatIds: new Set(), dispatchUnauthorized: false },
      ),
    );
    expect(r).toMatchObject({ outcome: 'persisted', update_id: update.update_id });
    const stored = (
      await db.pool.query(`select raw::text as raw from relay.inbox where update_id = $1`, [update.update_id])
    ).rows;
    expect(JSON.parse(stored[0].raw)).toEqual(update);
  });
});

describe("finding 4: an answer that is not the Bot API's is a transport glitch, never a halt", () => {
  it.each(['stop', 'quarantine'] as const)(
    'DECODE_POLICY=%s: HTML 200, truncated body and HTML 502 are retried with backoff; nothing lost or halted',
    async (decodePolicy) => {
      const { token, botId } = newBotToken();
      const chat = Number(botId);
      const sequence = ['html_ok', 'truncated', 'html_error', 'none', 'truncated', 'html_ok'] as const;
      sandbox.setFaults({ sequence: [...sequence], methods: ['getUpdates'] }, token);
      const inj = sandbox.injectMessages(token, 30, { chats: [chat] });
      const p = poll({ token, botId, decodePolicy });
      await waitFor(async () => (await inboxCount(db.pool, botId)) === 30, {
        what: 'the first updates stored despite glitches',
      });
      const last = sandbox.injectMessages(token, 10, { chats: [chat] }); // answered by the long poll that gets the next glitches
      await waitFor(async () => (await inboxCount(db.pool, botId)) === 40, {
        what: 'all updates stored despite glitches',
      });
      const outcomes = sandbox.calls(token, { method: 'getUpdates' }).map((c) => c.outcome);
      expect(outcomes.slice(0, sequence.length)).toEqual(['glitch', 'glitch', 'glitch', 'ok', 'glitch', 'glitch']);
      const cursor = await cursorOf(db.pool, botId);
      expect(cursor?.haltedReason).toBeNull();
      expect(cursor?.nextOffset).toBe(last.last_update_id! + 1);
      expect(inj.first_update_id! + 40).toBe(last.last_update_id! + 1);
      expect(cursor?.pollError).toBeNull(); // cleared by progress
      expect(p.poller.status().state).toBe('polling');
      expect(
        (await db.pool.query('select count(*)::int n from relay.quarantine where bot_id = $1', [botId])).rows[0].n,
      ).toBe(0);
      const glitchLogs = p.logs.lines().filter((l) => /not a Bot API answer/.test(l.msg ?? '') && l.level >= 40);
      expect(glitchLogs.length).toBeGreaterThanOrEqual(1);
      expect(glitchLogs.length).toBeLessThanOrEqual(2); // once per episode (two episodes in the sequence)
    },
  );

  it('while getUpdates keeps answering HTML, readiness names the glitch once progress is overdue; it recovers by itself', async () => {
    const { token, botId } = newBotToken();
    sandbox.setFaults({ sequence: Array(10_000).fill('html_ok'), methods: ['getUpdates'] }, token);
    const p = poll({ token, botId, pollTimeoutMs: 1_000 });
    await waitFor(() => sandbox.calls(token, { method: 'getUpdates' }).length >= 3, { what: 'repeated glitches' });
    await waitFor(async () => (await cursorOf(db.pool, botId))?.pollErrorKind === 'transport', {
      what: 'poll error recorded',
    });
    const later = new Date(Date.now() + 60_000);
    const h = await ingressHealth(db.pool, botId, { pollTimeoutMs: 1_000, now: later });
    expect(h.ready).toBe(false);
    expect(h.reasons.join('\n')).toMatch(/getUpdates answer is not a Bot API answer/);
    expect(h.haltedReason).toBeNull();
    sandbox.setFaults(null, token);
    sandbox.injectMessage(token, { chatId: Number(botId), text: 'after the proxy healed' });
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 1);
    await waitFor(async () => (await ingressHealth(db.pool, botId, { pollTimeoutMs: 1_000 })).ready, {
      what: 'ready again',
    });
    expect(p.poller.status().state).toBe('polling');
  });

  it('a wrong TELEGRAM_API_ROOT (404 on getUpdates): retried with backoff, readiness says why at once, logged once, never stops', async () => {
    const { token, botId } = newBotToken();
    const p = poll({ token, botId, apiRoot: `${sandbox.url}/not-the-bot-api/` });
    await waitFor(async () => (await cursorOf(db.pool, botId))?.pollErrorKind === 'configuration', {
      what: 'configuration error recorded',
    });
    const h = await ingressHealth(db.pool, botId, { pollTimeoutMs: 60_000 });
    expect(h.ready).toBe(false);
    expect(h.reasons.join('\n')).toMatch(/getUpdates answered 404 .*TELEGRAM_API_ROOT/);
    await new Promise((r) => setTimeout(r, 300)); // a few more retries
    expect(p.poller.status().state).toBe('polling');
    expect(p.logs.lines().filter((l) => l.level >= 50 && /404/.test(l.msg ?? ''))).toHaveLength(1);
  });
});

describe('finding 8 and 10: webhook bodies that are no update; transport on quarantine rows', () => {
  const SECRET = 'webhook-Secret_0123456789';

  async function startWebhook(token: string, botId: string, decodePolicy: 'stop' | 'quarantine') {
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
      pollTimeoutMs: 300,
      decodePolicy,
      allowedChatIds: [],
      secret: SECRET,
      publicUrl: `http://127.0.0.1:${port}/`,
      host: '127.0.0.1',
      port,
    });
    await ingress.start();
    running.push({ stop: async () => (await ingress.stop(), api.close()) });
    const url = `http://127.0.0.1:${port}/telegram/webhook/${botId}`;
    await waitFor(async () => (await cursorOf(db.pool, botId))?.leaseOwner != null);
    return { url, logs };
  }
  const post = (url: string, body: string) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': SECRET },
      body,
    });

  it.each(['stop', 'quarantine'] as const)(
    'DECODE_POLICY=%s: not JSON, an array, no update_id, a string update_id → 400, recorded once each, no halt; updates keep flowing',
    async (decodePolicy) => {
      const { token, botId } = newBotToken();
      const { url, logs } = await startWebhook(token, botId, decodePolicy);
      const bodies = [
        '<html>proxy</html>',
        '[1,2]',
        JSON.stringify({ message: { text: 'no id' } }),
        JSON.stringify({ update_id: '5', message: {} }),
        '',
      ];
      for (const b of bodies) {
        const r = await post(url, b);
        expect(r.status).toBe(400);
        expect(await r.json()).toMatchObject({ ok: false, error: 'not a Telegram update' });
      }
      expect((await post(url, bodies[0])).status).toBe(400); // a retry adds no row
      const q = (
        await db.pool.query(
          `select update_id, convert_from(raw, 'UTF8') as raw, transport, error from relay.quarantine where bot_id = $1 order by id`,
          [botId],
        )
      ).rows;
      expect(q.map((r) => r.raw)).toEqual(bodies);
      expect(
        q.every(
          (r) => r.update_id === null && r.transport === 'webhook' && /^webhook body rejected \(400\)/.test(r.error),
        ),
      ).toBe(true);

      const good = {
        update_id: 77,
        message: { message_id: 1, date: 1, chat: { id: Number(botId), type: 'private' }, text: HOSTILE.realNul },
      };
      expect((await post(url, JSON.stringify(good))).status).toBe(200);
      expect((await inboxExact(botId)).map((r) => r.raw)).toEqual([good]);
      expect((await cursorOf(db.pool, botId))?.haltedReason).toBeNull();
      await waitFor(async () => (await ingressHealth(db.pool, botId, { pollTimeoutMs: 300 })).ready, { what: 'ready' });
      expect(logs.text()).not.toContain('proxy</html>');
    },
  );

  it('quarantine rows say polling or webhook, and GET /v1/quarantine shows it', async () => {
    const { token, botId } = newBotToken();
    const chat = Number(botId);
    const a = sandbox.injectMessage(token, { chatId: chat, text: 'a' });
    sandbox.injectRawUpdate(token, {
      update_id: a.update_id + 1,
      message: { message_id: 'x', date: 1, chat: { id: chat } },
    });
    sandbox.injectMessage(token, { chatId: chat, text: 'c' });
    poll({ token, botId, decodePolicy: 'quarantine' });
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 2);
    const { url } = await (async () => {
      await Promise.all(running.splice(0).map((r) => r.stop()));
      return startWebhook(token, botId, 'quarantine');
    })();
    expect(
      (
        await post(
          url,
          JSON.stringify({ update_id: a.update_id + 10, message: { message_id: 1, date: 1, chat: { id: 'x' } } }),
        )
      ).status,
    ).toBe(200);

    const rows = (
      await db.pool.query(`select id, update_id, transport from relay.quarantine where bot_id = $1 order by id`, [
        botId,
      ])
    ).rows;
    expect(rows.map((r) => [Number(r.update_id), r.transport])).toEqual([
      [a.update_id + 1, 'polling'],
      [a.update_id + 10, 'webhook'],
    ]);
    const boss = await startBoss(db.url);
    const app = await buildTestApp(db.pool, boss);
    try {
      const list = await call(app, 'GET', `/v1/quarantine?limit=100`);
      expect(list.statusCode).toBe(200);
      const mine = list.json().items.filter((i: { bot_id: string }) => i.bot_id === botId);
      expect(mine.map((i: { transport: string }) => i.transport).sort()).toEqual(['polling', 'webhook']);
      const detail = await call(app, 'GET', `/v1/quarantine/${rows[0].id}`);
      expect(detail.json()).toMatchObject({ transport: 'polling' });
    } finally {
      await app.close();
      await boss.stop({ graceful: false, wait: true });
    }
  });
});
