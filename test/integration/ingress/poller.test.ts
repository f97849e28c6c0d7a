/**
 * The durable poller against the Bot API sandbox and a real PostgreSQL, in this process (the crash
 * and fencing scenarios with real processes are in processes.test.ts).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { ingressHealth } from '../../../libs/ingress/health';
import type { BotApiSandbox } from '../../../libs/sandbox';
import { adminUrl, createMigratedDatabase } from '../../support/db';
import {
  cursorOf,
  inboxCount,
  inboxUpdateIds,
  jobCounts,
  newBotToken,
  range,
  startSandbox,
  startTestPoller,
  TestPoller,
} from '../../support/ingress-harness';
import { waitFor } from '../../support/wait-for';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
const running: TestPoller[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('ingress_poller');
  sandbox = await startSandbox();
  await db.pool.query(`
    create table public.fail_inbox (bot_id text primary key);
    create function public.fail_inbox_trigger() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from public.fail_inbox f where f.bot_id = new.bot_id) then
        raise exception 'injected failure for bot %', new.bot_id using errcode = 'P0001';
      end if;
      return new;
    end $$;
    create trigger fail_inbox before insert on relay.inbox for each row execute function public.fail_inbox_trigger();`);
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.stop()));
});

afterAll(async () => {
  await sandbox.stop();
  await db.drop();
});

function start(o: Partial<Parameters<typeof startTestPoller>[0]> & { token: string; botId: string }): TestPoller {
  const p = startTestPoller({ pool: db.pool, url: db.url, apiRoot: sandbox.url, ...o });
  running.push(p);
  return p;
}

/** Offsets this bot's getUpdates calls asked for, in order. */
function polledOffsets(token: string): number[] {
  return sandbox.calls(token, { method: 'getUpdates' }).map((c) => Number(c.params.offset ?? 0));
}

describe('durable poller', () => {
  it('drains a backlog exactly once, with captures and jobs, and confirms only what is committed', async () => {
    const { token, botId } = newBotToken();
    const inj = sandbox.injectMessages(token, 1000, { chats: 20, chatBase: Number(botId) });
    start({ token, botId });
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 1000, { what: '1000 updates stored' });
    expect(await inboxUpdateIds(db.pool, botId)).toEqual(range(inj.first_update_id!, 1000));
    const cursor = await cursorOf(db.pool, botId);
    expect(cursor?.nextOffset).toBe(inj.last_update_id! + 1);
    expect(await jobCounts(db.pool, botId)).toEqual({ dispatch: 1000, capture: 1000 });
    // Every offset sent to Telegram was a committed cursor value: never beyond what is stored.
    const offsets = polledOffsets(token);
    expect(Math.max(...offsets)).toBeLessThanOrEqual(cursor!.nextOffset);
    expect(offsets.filter((o) => o > 0).every((o, i, a) => i === 0 || o >= a[i - 1])).toBe(true);
    await waitFor(() => sandbox.confirmedOffset(token) === inj.last_update_id! + 1, {
      what: 'batch confirmed by the next poll',
    });
    expect(sandbox.pendingCount(token)).toBe(0);
  });

  it('after a failed commit, nothing is stored, the same offset is polled again after backoff, and it recovers', async () => {
    const { token, botId } = newBotToken();
    const first = sandbox.injectMessage(token, { chatId: Number(botId), text: 'before' });
    const p = start({ token, botId });
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 1);
    await db.pool.query('insert into public.fail_inbox values ($1)', [botId]);
    const failing = first.update_id + 1;
    sandbox.injectMessages(token, 5, { chats: [Number(botId)] });
    await waitFor(() => polledOffsets(token).filter((o) => o === failing).length >= 4, {
      what: 'four polls at the failing offset',
    });

    expect(await inboxUpdateIds(db.pool, botId)).toEqual([first.update_id]);
    expect((await cursorOf(db.pool, botId))?.nextOffset).toBe(failing);
    expect(sandbox.confirmedOffset(token)).toBe(failing);
    expect(sandbox.pendingCount(token)).toBe(5);
    const times = sandbox
      .calls(token, { method: 'getUpdates' })
      .filter((c) => Number(c.params.offset) === failing)
      .map((c) => c.time);
    // backoff 50 ms doubling (half jittered): at least 25 + 50 + 100 ms between the first and the fourth poll
    expect(times[3] - times[0]).toBeGreaterThanOrEqual(150);
    const failures = p.logs.lines().filter((l) => l.msg?.startsWith('batch transaction failed'));
    expect(failures.filter((l) => l.level >= 50)).toHaveLength(1); // logged once per episode, repeats only at debug
    expect(failures.length).toBeGreaterThanOrEqual(3);

    await db.pool.query('delete from public.fail_inbox where bot_id = $1', [botId]);
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 6, { what: 'the failed batch committed' });
    expect(await inboxUpdateIds(db.pool, botId)).toEqual(range(first.update_id, 6));
    expect((await cursorOf(db.pool, botId))?.nextOffset).toBe(failing + 5);
    expect(p.logs.lines().some((l) => l.msg === 'batch persisted again')).toBe(true);
  });

  it('survives Bot API 5xx answers and dropped connections without loss or duplicates', async () => {
    const { token, botId } = newBotToken();
    const sequence = [
      'server_error',
      'drop_before',
      'drop_after',
      'none',
      'server_error',
      'drop_after',
      'none',
      'drop_after',
      'drop_before',
      'none',
      'drop_after',
    ] as const;
    sandbox.setFaults({ sequence: [...sequence], methods: ['getUpdates'] }, token);
    const inj = sandbox.injectMessages(token, 600, { chats: 7, chatBase: Number(botId) });
    start({ token, botId });
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 600, {
      what: '600 updates despite faults',
      timeoutMs: 30_000,
    });
    sandbox.setFaults(null, token);
    expect(await inboxUpdateIds(db.pool, botId)).toEqual(range(inj.first_update_id!, 600));
    const outcomes = sandbox.calls(token, { method: 'getUpdates' }).map((c) => c.outcome);
    expect(outcomes.slice(0, sequence.length)).toEqual([
      'server_error',
      'dropped_before',
      'dropped_after',
      'ok',
      'server_error',
      'dropped_after',
      'ok',
      'dropped_after',
      'dropped_before',
      'ok',
      'dropped_after',
    ]);
    expect((await cursorOf(db.pool, botId))?.nextOffset).toBe(inj.last_update_id! + 1);
  });

  it('409 (a webhook or another poller took the updates): backs off, logs once per episode, keeps the lease, resumes', async () => {
    const { token, botId } = newBotToken();
    const p = start({ token, botId });
    await waitFor(() => p.poller.status().state === 'polling' && polledOffsets(token).length > 0);
    const generation = p.poller.status().generation;

    // Another process sets a webhook: every getUpdates now answers 409.
    const call = (method: string, params: unknown) =>
      fetch(`${sandbox.url}/bot${token}/${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(params),
      }).then((r) => r.json() as Promise<{ ok: boolean; error_code?: number }>);
    await call('setWebhook', { url: 'http://127.0.0.1:9/elsewhere' });
    await waitFor(() => sandbox.calls(token, { method: 'getUpdates' }).filter((c) => c.status === 409).length >= 4, {
      what: 'repeated 409s',
    });
    const during = sandbox.calls(token, { method: 'getUpdates' }).filter((c) => c.status === 409);
    await call('deleteWebhook', {});

    // And a foreign poller (no offset: it confirms nothing) competes for a while.
    const until = Date.now() + 600;
    let foreign409 = 0;
    while (Date.now() < until) {
      const r = await call('getUpdates', { timeout: 1 });
      if (r.error_code === 409) foreign409++;
    }

    sandbox.injectMessage(token, { chatId: Number(botId), text: 'after the conflict' });
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 1, { what: 'resumed after the conflict' });

    const conflictLogs = p.logs.lines().filter((l) => l.msg?.startsWith('getUpdates conflict:') && l.level >= 40);
    expect(conflictLogs.length).toBeLessThanOrEqual(2); // the webhook episode, and maybe the foreign poller's
    expect(conflictLogs.length).toBeGreaterThanOrEqual(1);
    expect(conflictLogs[0].level).toBe(40);
    expect(p.logs.lines().filter((l) => l.msg?.startsWith('getUpdates conflict over')).length).toBe(
      conflictLogs.length,
    );
    // Backoff, not a hot loop: 4+ conflicts took at least 25+50+100 ms.
    expect(during[3].time - during[0].time).toBeGreaterThanOrEqual(150);
    expect(p.poller.status().generation).toBe(generation);
    // The two pollers really overlapped: Telegram's "terminated by other getUpdates request" was answered.
    const overlap = sandbox
      .calls(token, { method: 'getUpdates' })
      .filter((c) => c.status === 409 && /terminated by other getUpdates/.test(c.description ?? ''));
    expect(overlap.length + foreign409).toBeGreaterThan(0);
  });

  it('a Bot API that answers empty long polls at once is polled about once a second, not in a tight loop', async () => {
    const { token, botId } = newBotToken();
    let polls = 0;
    const api = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const method = req.url?.split('/').pop();
        res.setHeader('content-type', 'application/json');
        if (method === 'getWebhookInfo')
          return res.end(
            JSON.stringify({ ok: true, result: { url: '', has_custom_certificate: false, pending_update_count: 0 } }),
          );
        polls++;
        res.end(JSON.stringify({ ok: true, result: [] })); // timeout ignored
      });
    });
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    try {
      const p = start({ token, botId, apiRoot: `http://127.0.0.1:${(api.address() as AddressInfo).port}` });
      await waitFor(() => polls >= 1, { what: 'first poll' });
      const first = polls;
      await new Promise((r) => setTimeout(r, 2_500));
      // about 2-3 more; without the floor, hundreds (one poll and one progress write per round trip)
      expect(polls - first).toBeGreaterThanOrEqual(1);
      expect(polls - first).toBeLessThanOrEqual(5);
      // one warning for the episode, not one per poll
      expect(p.logs.lines().filter((l) => l.episode === 'early-empty' && l.level === 40)).toHaveLength(1);
    } finally {
      await Promise.all(running.splice(0).map((p) => p.stop()));
      api.closeAllConnections();
      await new Promise((r) => api.close(r));
    }
  });

  it('429: waits retry_after before polling again', async () => {
    const { token, botId } = newBotToken();
    const times: number[] = [];
    const api = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const method = req.url?.split('/').pop();
        res.setHeader('content-type', 'application/json');
        if (method === 'getWebhookInfo')
          return res.end(
            JSON.stringify({ ok: true, result: { url: '', has_custom_certificate: false, pending_update_count: 0 } }),
          );
        times.push(Date.now());
        if (times.length === 1) {
          res.statusCode = 429;
          res.setHeader('retry-after', '1');
          return res.end(
            JSON.stringify({
              ok: false,
              error_code: 429,
              description: 'Too Many Requests: retry after 1',
              parameters: { retry_after: 1 },
            }),
          );
        }
        const offset = JSON.parse(body).offset;
        const result =
          offset > 500
            ? []
            : [
                {
                  update_id: 500,
                  message: { message_id: 1, date: 1, chat: { id: Number(botId), type: 'private' }, text: 'x' },
                },
              ];
        setTimeout(() => res.end(JSON.stringify({ ok: true, result })), offset > 500 ? 200 : 0);
      });
    });
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    try {
      start({ token, botId, apiRoot: `http://127.0.0.1:${(api.address() as AddressInfo).port}` });
      await waitFor(async () => (await inboxCount(db.pool, botId)) === 1, { what: 'update stored after the 429' });
      expect(times[1] - times[0]).toBeGreaterThanOrEqual(990);
    } finally {
      await Promise.all(running.splice(0).map((p) => p.stop()));
      api.closeAllConnections();
      await new Promise((r) => api.close(r));
    }
  });

  it('401 (revoked token): retries with backoff, keeps the lease, says why in readiness, logs once, never stops', async () => {
    const { token, botId } = newBotToken();
    const p = start({ token, botId });
    await waitFor(() => p.poller.status().state === 'polling');
    const generation = p.poller.status().generation;
    sandbox.revokeToken(token);
    sandbox.injectMessage(token, { chatId: Number(botId), text: 'wake the long poll' });
    await waitFor(() => sandbox.calls(token, { method: 'getUpdates' }).filter((c) => c.status === 401).length >= 4, {
      what: 'repeated 401s',
    });
    const health = await ingressHealth(db.pool, botId, { pollTimeoutMs: 60_000 });
    expect(health.ready).toBe(false);
    expect(health.reasons.join('\n')).toMatch(/getUpdates answered 401 .*TELEGRAM_BOT_TOKEN/);
    expect((await cursorOf(db.pool, botId))?.leaseOwner).not.toBeNull();
    expect(p.poller.status()).toMatchObject({ state: 'polling', generation });
    const errors = p.logs.lines().filter((l) => l.level >= 50 && /401/.test(l.msg ?? ''));
    expect(errors).toHaveLength(1); // once per episode
    expect(p.logs.text()).not.toContain(token.split(':')[1]);
    await Promise.race([
      p.poller.done.then((e) => Promise.reject(new Error(`poller ended: ${e.reason}`))),
      new Promise((r) => setTimeout(r, 100)),
    ]);
  });

  it('DECODE_POLICY=stop halts at the bad update (nothing of it stored, not confirmed); quarantine then moves past it', async () => {
    const { token, botId } = newBotToken();
    const chat = Number(botId);
    const a = sandbox.injectMessage(token, { chatId: chat, text: 'a' });
    const bad = {
      update_id: a.update_id + 1,
      message: { message_id: 'not a number', date: 1, chat: { id: chat, type: 'private' }, text: 'secret user text' },
    };
    expect(sandbox.injectRawUpdate(token, bad).slot).toBe(a.update_id + 1);
    const c = sandbox.injectMessage(token, { chatId: chat, text: 'c' });

    const stopPoller = start({ token, botId, decodePolicy: 'stop' });
    await waitFor(() => stopPoller.poller.status().state === 'halted', { what: 'halted' });
    expect(await inboxUpdateIds(db.pool, botId)).toEqual([a.update_id]);
    const cur = await cursorOf(db.pool, botId);
    expect(cur?.nextOffset).toBe(bad.update_id);
    expect(cur?.haltedReason).toMatch(
      new RegExp(
        `update_id ${bad.update_id} could not be decoded \\(\\$\\.message\\.message_id: expected an integer\\)`,
      ),
    );
    const health = await ingressHealth(db.pool, botId, { pollTimeoutMs: 1000 });
    expect(health.ready).toBe(false);
    expect(health.reasons.join()).toMatch(/halted: /);
    // Halted means halted: no more polls, so Telegram never gets an offset past the bad update.
    const polls = polledOffsets(token).length;
    await new Promise((r) => setTimeout(r, 300));
    expect(polledOffsets(token).length).toBe(polls);
    expect(sandbox.confirmedOffset(token) ?? 0).toBeLessThanOrEqual(bad.update_id);
    // a (committed but not yet confirmed: halting sends no further poll), bad and c are all still at Telegram.
    expect(sandbox.pendingCount(token)).toBe(3);
    expect(stopPoller.logs.text()).not.toContain('secret user text');
    await stopPoller.stop();
    running.splice(running.indexOf(stopPoller), 1);

    const q = start({ token, botId, decodePolicy: 'quarantine' });
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 2, { what: 'update after the bad one stored' });
    expect(await inboxUpdateIds(db.pool, botId)).toEqual([a.update_id, c.update_id]);
    const { rows } = await db.pool.query(
      `select update_id, convert_from(raw, 'UTF8') as raw, json_path from relay.quarantine where bot_id = $1`,
      [botId],
    );
    expect(rows).toEqual([
      { update_id: String(bad.update_id), raw: JSON.stringify(bad), json_path: '$.message.message_id' },
    ]);
    expect((await cursorOf(db.pool, botId))?.haltedReason).toBeNull();
    await waitFor(async () => (await ingressHealth(db.pool, botId, { pollTimeoutMs: 1000 })).ready, {
      what: 'ready again',
    });
    expect(q.logs.text()).not.toContain('secret user text');
  });

  it('a capture key already stored with different data (an earlier update under a reused id) never halts ingress: that update waits in quarantine, the ones after it flow', async () => {
    const { token, botId } = newBotToken();
    const chat = Number(botId);
    const a = sandbox.injectMessage(token, { chatId: chat, text: 'a' });
    // a capture of this bot with other data already holds the key the next message will have
    const next = { updateId: a.update_id + 1, messageId: a.message!.message_id + 1 };
    const key = `telegram:${botId}:${next.updateId}:${chat}:${next.messageId}`;
    await db.pool.query(
      `insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, payload, payload_raw, payload_sha256)
       values ($1, $5, $2, $3, $4, '{"other":true}', '{"other":true}', 'not-this-one')`,
      [key, next.updateId, chat, next.messageId, botId],
    );
    const b = sandbox.injectMessage(token, { chatId: chat, text: 'secret user text' });
    expect(`telegram:${botId}:${b.update_id}:${chat}:${b.message!.message_id}`).toBe(key);
    const c = sandbox.injectMessage(token, { chatId: chat, text: 'c' });

    const p = start({ token, botId });
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 3, { what: 'all three updates stored' });
    await waitFor(() => (sandbox.confirmedOffset(token) ?? 0) > c.update_id, {
      what: 'the batch confirmed to Telegram',
    });
    expect(p.poller.status().state).toBe('polling');
    const q = await db.pool.query(
      `select update_id::int as id, convert_from(raw, 'UTF8') as raw, error from relay.quarantine where bot_id = $1`,
      [botId],
    );
    expect(q.rows).toHaveLength(1);
    expect(q.rows[0]).toMatchObject({
      id: b.update_id,
      error: expect.stringContaining(`RELAY_CAPTURE_KEY_CONFLICT: capture key ${key}`),
    });
    expect(JSON.parse(q.rows[0].raw)).toEqual(b);
    const caps = await db.pool.query(
      `select bot_id, update_id::int as id, payload_sha256 from relay.captures where chat_id = $1 order by update_id`,
      [chat],
    );
    expect(caps.rows.map((r) => [r.bot_id, r.id])).toEqual([
      [botId, a.update_id],
      [botId, b.update_id],
      [botId, c.update_id],
    ]);
    expect(caps.rows[1].payload_sha256).toBe('not-this-one'); // never overwritten
    expect(await jobCounts(db.pool, botId)).toEqual({ dispatch: 3, capture: 2 });
    await waitFor(async () => (await ingressHealth(db.pool, botId, { pollTimeoutMs: 1000 })).ready, { what: 'ready' });
    expect(p.logs.text()).toContain(key);
    expect(p.logs.text()).not.toContain('secret user text');
  });

  it('quarantine: an item that is not JSON at the end of a batch is stored raw and passed one slot at a time', async () => {
    const { token, botId } = newBotToken();
    const a = sandbox.injectMessage(token, { chatId: Number(botId), text: 'a' });
    sandbox.injectRawUpdate(token, 'definitely not json');
    start({ token, botId, decodePolicy: 'quarantine' });
    await waitFor(async () => (await cursorOf(db.pool, botId))?.nextOffset === a.update_id + 2, {
      what: 'cursor past the garbage',
    });
    await waitFor(() => sandbox.pendingCount(token) === 0, { what: 'garbage confirmed' });
    const b = sandbox.injectMessage(token, { chatId: Number(botId), text: 'b' });
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 2);
    expect(await inboxUpdateIds(db.pool, botId)).toEqual([a.update_id, b.update_id]);
    const { rows } = await db.pool.query(
      `select update_id, convert_from(raw, 'UTF8') as raw from relay.quarantine where bot_id = $1`,
      [botId],
    );
    expect(rows).toEqual([{ update_id: null, raw: 'definitely not json' }]);
  });

  it('survives the database going away (connections killed, refused for a while): no loss, no duplicate, new generation', async () => {
    const { token, botId } = newBotToken();
    const p = start({ token, botId, leaseTtlMs: 1000 });
    const first = sandbox.injectMessages(token, 50, { chats: 3, chatBase: Number(botId) });
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 50);
    const gen = p.poller.status().generation!;
    const admin = new Client({ connectionString: adminUrl() });
    await admin.connect();
    try {
      await admin.query(`alter database "${db.name}" allow_connections false`);
      await admin.query(
        'select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
        [db.name],
      );
      sandbox.injectMessages(token, 50, { chats: 3, chatBase: Number(botId) });
      await new Promise((r) => setTimeout(r, 1500));
      expect(sandbox.confirmedOffset(token)).toBe(first.last_update_id! + 1); // nothing confirmed while the database is down
    } finally {
      await admin.query(`alter database "${db.name}" allow_connections true`);
      await admin.end();
    }
    await waitFor(async () => (await inboxCount(db.pool, botId).catch(() => 0)) === 100, {
      what: 'all 100 stored after the outage',
      timeoutMs: 20_000,
    });
    expect(await inboxUpdateIds(db.pool, botId)).toEqual(range(first.first_update_id!, 100));
    expect(p.poller.status().state).not.toBe('stopped');
    expect(p.poller.status().generation).toBeGreaterThan(gen); // the lease lapsed during the outage: re-acquired as a new generation
    expect(p.logs.lines().some((l) => l.msg === 'ingress lease lost')).toBe(true);
  });
});
