/**
 * Real `tg-relay poller` processes against the sandbox and a real PostgreSQL: kill -9 at random
 * points, SIGSTOP/SIGCONT fencing, standby takeover, graceful release, 401 exit, webhook mode.
 */
import crypto from 'node:crypto';
import type { BotApiSandbox } from '../../../libs/sandbox';
import { exited } from '../../support/cli';
import { createMigratedDatabase } from '../../support/db';
import {
  cursorOf,
  inboxCount,
  inboxUpdateIds,
  jobCounts,
  newBotToken,
  range,
  startSandbox,
} from '../../support/ingress-harness';
import {
  hasLog,
  killHard,
  ownedBy,
  PollerProcess,
  startListening,
  startPollerProcess,
} from '../../support/ingress-processes';
import { waitFor } from '../../support/wait-for';

jest.setTimeout(120_000);

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
const procs: PollerProcess[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('ingress_proc');
  sandbox = await startSandbox();
});
afterEach(async () => {
  for (const p of procs.splice(0)) {
    if (p.signalCode === 'SIGSTOP' || p.exitCode === null) p.kill('SIGCONT');
    await killHard(p);
  }
});
afterAll(async () => {
  await sandbox.stop();
  await db.drop();
});

function spawnPoller(token: string, extra: Partial<Parameters<typeof startPollerProcess>[0]> = {}): PollerProcess {
  const p = startPollerProcess({ databaseUrl: db.url, apiRoot: sandbox.url, token, ...extra });
  procs.push(p);
  return p;
}

/** A small seeded PRNG so a failing run can be replayed (the seed is printed on failure). */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), s | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('poller processes', () => {
  it('kill -9 at random points, 10 restarts over a 5,000-update backlog: every update exactly once, no gap, nothing confirmed uncommitted', async () => {
    const seed = Number(process.env.KILL_SEED ?? crypto.randomInt(1e9));
    const random = prng(seed);
    const { token, botId } = newBotToken();
    const inj = sandbox.injectMessages(token, 5000, { chats: 50, chatBase: Number(botId) });
    // A little Bot API latency so ten lives do not drain the backlog before the last kill.
    sandbox.setFaults({ latencyMs: 15, methods: ['getUpdates'] }, token);
    const first = inj.first_update_id!;
    const last = inj.last_update_id!;
    const kills: Array<{ stored: number; confirmed: number | null; cursor: number }> = [];
    try {
      // One snapshot of cursor and inbox (a commit sent just before a SIGKILL may still land after it).
      const state = async () => {
        const { rows } = await db.pool.query(
          `select c.next_offset, c.lease_owner, count(i.update_id)::int as stored, min(i.update_id) as lo, max(i.update_id) as hi
             from relay.cursor c left join relay.inbox i on i.bot_id = c.bot_id
            where c.bot_id = $1 group by c.next_offset, c.lease_owner`,
          [botId],
        );
        const r = rows[0] ?? { next_offset: 0, lease_owner: null, stored: 0, lo: null, hi: null };
        return {
          cursor: Number(r.next_offset),
          owner: r.lease_owner as string | null,
          stored: r.stored as number,
          lo: r.lo === null ? null : Number(r.lo),
          hi: r.hi === null ? null : Number(r.hi),
        };
      };
      for (let i = 0; i < 10; i++) {
        const before = (await state()).stored;
        const p = spawnPoller(token);
        // Let it take the lease and commit at least one batch of its own, then kill it somewhere in
        // the next ~0-80 ms: mid-poll, mid-transaction, between commit and the confirming poll.
        await waitFor(
          async () => {
            const s = await state();
            return (ownedBy(s.owner, p) && s.stored > before) || p.exitCode !== null;
          },
          { timeoutMs: 30_000, intervalMs: 5, what: `restart ${i} to make progress` },
        );
        expect(p.exitCode).toBeNull();
        await new Promise((r) => setTimeout(r, Math.floor(random() * 80)));
        await killHard(p);
        const s = await state();
        const confirmed = sandbox.confirmedOffset(token);
        kills.push({ stored: s.stored, confirmed, cursor: s.cursor });
        // Telegram was never told to forget an update that is not committed.
        expect(confirmed ?? 0).toBeLessThanOrEqual(s.cursor);
        // What is committed is a gapless prefix, and the cursor is exactly after it.
        expect(s.lo).toBe(first);
        expect(s.hi! - s.lo! + 1).toBe(s.stored);
        expect(s.cursor).toBe(first + s.stored);
      }
      expect(kills[kills.length - 1].stored).toBeLessThan(5000); // the kills really interrupted the drain
      if (process.env.DEBUG_KILLS) console.log(JSON.stringify(kills));

      sandbox.setFaults(null, token);
      const final = spawnPoller(token);
      await waitFor(async () => (await inboxCount(db.pool, botId)) === 5000, {
        timeoutMs: 60_000,
        what: 'the rest of the backlog',
      });
      await waitFor(() => sandbox.confirmedOffset(token) === last + 1, { what: 'last batch confirmed' });
      final.kill('SIGTERM');
      expect(await exited(final)).toEqual({ code: 0, signal: null });

      expect(await inboxUpdateIds(db.pool, botId)).toEqual(range(first, 5000));
      const cursor = (await cursorOf(db.pool, botId))!;
      expect(cursor).toMatchObject({ nextOffset: last + 1, leaseOwner: null });
      expect(cursor.leaseGeneration).toBeGreaterThanOrEqual(11);
      expect(sandbox.pendingCount(token)).toBe(0);
      // Exactly one capture and one job of each kind per update: no batch was half-applied or applied twice.
      const { rows } = await db.pool.query(
        'select count(*)::int as n, count(distinct update_id)::int as d from relay.captures where bot_id = $1',
        [botId],
      );
      expect(rows[0]).toEqual({ n: 5000, d: 5000 });
      expect(await jobCounts(db.pool, botId)).toEqual({ dispatch: 5000, capture: 5000 });
    } catch (err) {
      throw new Error(`${(err as Error).message}\n(KILL_SEED=${seed}; kills: ${JSON.stringify(kills)})`, {
        cause: err,
      });
    }
  });

  it('fencing: an owner paused with SIGSTOP past its lease is taken over; after SIGCONT its commit fails and changes nothing', async () => {
    const { token, botId } = newBotToken();
    const chat = Number(botId);
    const a = spawnPoller(token, { pollTimeout: '20s' });
    await waitFor(async () => ownedBy((await cursorOf(db.pool, botId))?.leaseOwner, a), { what: 'A owns the lease' });
    const genA = (await cursorOf(db.pool, botId))!.leaseGeneration;

    // Pause A while its long poll is pending, then inject: the sandbox answers A's poll (the batch sits
    // unread in A's socket). Retry if A happened to be between polls.
    let answered = false;
    let injected: number[] = [];
    for (let attempt = 0; attempt < 10 && !answered; attempt++) {
      await waitFor(() => sandbox.calls(token, { method: 'getWebhookInfo' }).length > 0);
      await new Promise((r) => setTimeout(r, 300));
      const callsBefore = sandbox.calls(token, { method: 'getUpdates' }).length;
      const storedBefore = await inboxCount(db.pool, botId);
      a.kill('SIGSTOP');
      const r = sandbox.injectMessages(token, 5, { chats: [chat] });
      injected = range(r.first_update_id!, 5);
      await new Promise((res) => setTimeout(res, 200));
      answered = sandbox.calls(token, { method: 'getUpdates' }).length > callsBefore;
      if (!answered) {
        a.kill('SIGCONT');
        await waitFor(async () => (await inboxCount(db.pool, botId)) >= storedBefore + 5, {
          what: 'A stored the batch (retrying the pause)',
        });
      }
    }
    expect(answered).toBe(true);

    const b = spawnPoller(token, { pollTimeout: '20s' });
    await waitFor(async () => ownedBy((await cursorOf(db.pool, botId))?.leaseOwner, b), {
      what: 'B took over',
      timeoutMs: 20_000,
    });
    await waitFor(async () => (await inboxUpdateIds(db.pool, botId)).includes(injected[4]), {
      what: 'B stored the batch A holds',
    });
    const genB = (await cursorOf(db.pool, botId))!.leaseGeneration;
    expect(genB).toBe(genA + 1);
    const snapshot = async () => {
      const { rows } = await db.pool.query(
        `select (select json_agg(json_build_object('u', update_id, 'g', generation) order by update_id) from relay.inbox where bot_id = $1) as inbox,
                (select count(*)::int from relay.captures where bot_id = $1) as captures,
                (select next_offset from relay.cursor where bot_id = $1) as next_offset,
                (select lease_owner from relay.cursor where bot_id = $1) as owner,
                (select lease_generation from relay.cursor where bot_id = $1) as generation`,
        [botId],
      );
      return { ...rows[0], jobs: await jobCounts(db.pool, botId) };
    };
    const before = await snapshot();
    expect(
      before.inbox
        .filter((r: { u: number }) => injected.includes(Number(r.u)))
        .every((r: { g: number }) => Number(r.g) === genB),
    ).toBe(true);

    a.kill('SIGCONT');
    await waitFor(() => hasLog(a, /batch rejected by the lease fence/), { what: "A's fenced commit to be rejected" });
    expect(await snapshot()).toEqual(before);
    expect(a.exitCode).toBeNull(); // A stays up, as a standby
    await waitFor(() => hasLog(a, 'ingress lease lost'));
  });

  it('a standby takes over within one lease period of the owner dying; SIGTERM drains, releases and exits 0', async () => {
    const { token, botId } = newBotToken();
    const ttlMs = 1500;
    const env = { leaseTtl: `${ttlMs}ms` };
    const a = spawnPoller(token, env);
    await waitFor(async () => ownedBy((await cursorOf(db.pool, botId))?.leaseOwner, a), { what: 'A owns the lease' });
    const b = spawnPoller(token, env);
    await waitFor(() => hasLog(b, /ingress starting/), { what: 'B up as standby' });
    await new Promise((r) => setTimeout(r, 300));
    expect(ownedBy((await cursorOf(db.pool, botId))?.leaseOwner, a)).toBe(true);

    const killedAt = Date.now();
    await killHard(a);
    await waitFor(async () => ownedBy((await cursorOf(db.pool, botId))?.leaseOwner, b), {
      what: 'B took over',
      timeoutMs: 10_000,
      intervalMs: 10,
    });
    const takeoverMs = Date.now() - killedAt;
    expect(takeoverMs).toBeLessThanOrEqual(ttlMs + 1000); // one lease period (+ scheduling slack on a loaded 2-core machine)

    const r = sandbox.injectMessages(token, 20, { chats: 2, chatBase: Number(botId) });
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 20, { what: 'B stores new updates' });
    expect(await inboxUpdateIds(db.pool, botId)).toEqual(range(r.first_update_id!, 20));

    const c = spawnPoller(token, env);
    await waitFor(() => hasLog(c, /ingress starting/), { what: 'C up as standby' });
    const termAt = Date.now();
    b.kill('SIGTERM');
    expect(await exited(b)).toEqual({ code: 0, signal: null });
    expect(hasLog(b, 'ingress lease released')).toBe(true);
    await waitFor(async () => ownedBy((await cursorOf(db.pool, botId))?.leaseOwner, c), {
      what: 'C took over',
      intervalMs: 10,
    });
    expect(Date.now() - termAt).toBeLessThan(ttlMs + 1000);
    // Released (audited), not left to expire.
    const { rows } = await db.pool.query(
      `select outcome, worker_id from relay.attempts where subject = 'cursor' and subject_key = $1 order by id`,
      [botId],
    );
    expect(rows.map((r) => r.outcome)).toEqual([
      'lease_acquired',
      'lease_acquired',
      'lease_released',
      'lease_acquired',
    ]);
    expect(ownedBy(rows[2].worker_id, b)).toBe(true);
  });

  it('401 from Telegram: stops with a clear message and exit code 78, never printing the token', async () => {
    const { token } = newBotToken();
    sandbox.injectMessage(token, { chatId: 1, text: 'x' });
    sandbox.revokeToken(token);
    const p = spawnPoller(token);
    expect(await exited(p)).toEqual({ code: 78, signal: null });
    expect(p.output()).toMatch(/Telegram rejected the bot token \(401 Unauthorized\): check TELEGRAM_BOT_TOKEN/);
    expect(p.output()).not.toContain(token.split(':')[1]);
  });

  it('INGRESS=webhook: registers the webhook with the secret and stores what Telegram delivers', async () => {
    const { token, botId } = newBotToken();
    const { p, port } = await startListening((port) =>
      spawnPoller(token, {
        extra: {
          INGRESS: 'webhook',
          WEBHOOK_PORT: String(port),
          WEBHOOK_HOST: '127.0.0.1',
          WEBHOOK_PUBLIC_URL: `http://127.0.0.1:${port}`,
          WEBHOOK_SECRET: 'proc-Secret_42_webhook',
        },
      }),
    );
    await waitFor(() => sandbox.webhookInfo(token).url === `http://127.0.0.1:${port}/telegram/webhook/${botId}`, {
      what: 'webhook registered',
      timeoutMs: 20_000,
    });
    const r = sandbox.injectMessages(token, 30, { chats: 3, chatBase: Number(botId) });
    await waitFor(
      async () => (await inboxCount(db.pool, botId)) === 30 && sandbox.webhookInfo(token).pending_update_count === 0,
      {
        what: 'delivered and acknowledged',
      },
    );
    expect(await inboxUpdateIds(db.pool, botId)).toEqual(range(r.first_update_id!, 30));
    const bad = await fetch(`http://127.0.0.1:${port}/telegram/webhook/${botId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': 'nope' },
      body: '{"update_id":1}',
    });
    expect(bad.status).toBe(401);
    p.kill('SIGTERM');
    expect(await exited(p)).toEqual({ code: 0, signal: null });
  });
});
