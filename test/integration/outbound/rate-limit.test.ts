/** The fleet-wide limiter's state in PostgreSQL, driven by several pools at once as replicas would. */
import { performance } from 'node:perf_hooks';
import { createPool, Pool } from '../../../libs/db';
import { createOutboundRateLimiter, OUTBOUND_RATE_LIMITS_DEFAULT } from '../../../libs/outbound';
import { createProcessRegistry, rateLimitMetrics } from '../../../libs/observability/metrics';
import { createMigratedDatabase } from '../../support/db';
import { parsePrometheus } from '../admin/prom-parse';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
beforeAll(async () => {
  db = await createMigratedDatabase('ob_rate');
});
afterAll(async () => {
  await db.drop();
});

const limiter = (perBot = 30) =>
  createOutboundRateLimiter({ ...OUTBOUND_RATE_LIMITS_DEFAULT, perBot: { count: perBot, windowMs: 1000 } });

describe('fleet-wide rate limits in PostgreSQL', () => {
  it('spaces the sends of several replicas evenly at the bot rate, together', async () => {
    const rate = 50;
    const pools: Pool[] = Array.from({ length: 3 }, () => createPool(db.url, { max: 4 }));
    const l = limiter(rate);
    const sends: number[] = [];
    const t0 = performance.now();
    const durationMs = 2_000;
    try {
      // 3 "replicas" × 4 concurrent senders, each to its own chats, as fast as the limiter lets them
      await Promise.all(
        pools.flatMap((pool, p) =>
          Array.from({ length: 4 }, async (_, k) => {
            let n = 0;
            while (performance.now() - t0 < durationMs) {
              const r = await l.acquire(pool, 'bot-a', String(1000 + p * 100 + k * 10 + (n++ % 10)));
              if (r.ok) sends.push(performance.now() - t0);
            }
          }),
        ),
      );
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
    sends.sort((a, b) => a - b);
    // the cap is used (first to last send; start-up and the machine's load are not the limiter's)
    const achieved = (sends.length - 1) / ((sends[sends.length - 1] - sends[0]) / 1000);
    expect(sends.length).toBeGreaterThan(rate);
    expect(achieved).toBeGreaterThanOrEqual(rate * 0.9);
    expect(achieved).toBeLessThanOrEqual(rate * 1.05);
    // evenly spaced (not in bursts): the typical gap is the emission interval
    const interval = 1000 / rate;
    const gaps = sends
      .slice(1)
      .map((t, i) => t - sends[i])
      .sort((a, b) => a - b);
    expect(gaps[Math.floor(gaps.length / 2)]).toBeGreaterThan(interval * 0.7);
    expect(gaps[Math.floor(gaps.length / 2)]).toBeLessThan(interval * 1.3);
    // never above the cap as Telegram's flood control (the sandbox's GCRA) sees it: zero 429s
    const tau = (rate - 1) * interval + 100;
    let tat = -Infinity;
    const early: number[] = [];
    for (const t of sends) {
      if (t < tat - tau) early.push(t);
      tat = Math.max(tat, t) + interval;
    }
    expect(early).toEqual([]);
    const { rows } = await db.pool.query(`select tat from relay.outbound_bot_rate where bot_id = 'bot-a'`);
    expect(rows).toHaveLength(1);
  });

  it('paces paid bulk sends by their own budget (PAID_BROADCAST_RATE), leaving the free one to interactive sends', async () => {
    const paidRate = 90;
    const l = createOutboundRateLimiter({
      ...OUTBOUND_RATE_LIMITS_DEFAULT,
      perBot: { count: 30, windowMs: 1000 },
      paidBroadcast: { count: paidRate, windowMs: 1000 },
    });
    const pools: Pool[] = Array.from({ length: 3 }, () => createPool(db.url, { max: 4 }));
    const paid: number[] = [];
    const replyWaits: number[] = [];
    const t0 = performance.now();
    try {
      const senders = pools.flatMap((pool, p) =>
        Array.from({ length: 4 }, async (_, k) => {
          let n = 0;
          while (performance.now() - t0 < 1_500) {
            const chat = String(10_000 + p * 1000 + k * 100 + (n++ % 100));
            const r = await l.acquire(pool, 'bot-paid', chat, undefined, 1, 'bulk', true);
            if (r.ok) paid.push(performance.now() - t0);
          }
        }),
      );
      // interactive sends meanwhile, 5/s: each takes the next free slot (nothing else uses the free budget)
      const replies = (async () => {
        for (let i = 0; i < 6; i++) {
          const r = await l.acquire(pools[0], 'bot-paid', String(50 + i));
          if (r.ok) replyWaits.push(r.waitedMs);
          await new Promise((res) => setTimeout(res, 200));
        }
      })();
      await Promise.all([...senders, replies]);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
    paid.sort((a, b) => a - b);
    const achieved = (paid.length - 1) / ((paid[paid.length - 1] - paid[0]) / 1000);
    // well above the free 30/s, not above the paid rate
    expect(achieved).toBeGreaterThan(paidRate * 0.8);
    expect(achieved).toBeLessThanOrEqual(paidRate * 1.05);
    expect(replyWaits).toHaveLength(6);
    for (const w of replyWaits) expect(w).toBeLessThanOrEqual(1000 / 30 + 1);
    // a plain bulk row, or any row with the paid budget off, still takes the free budget
    const free = createOutboundRateLimiter({ ...OUTBOUND_RATE_LIMITS_DEFAULT, perBot: { count: 1, windowMs: 1000 } });
    const never = AbortSignal.abort();
    expect(await free.acquire(db.pool, 'bot-paid-off', '1', never, 1, 'bulk', true)).toMatchObject({ ok: true });
    // the next free slot is a second away: too far for a bulk row, which gives its claim back
    const second = await free.acquire(db.pool, 'bot-paid-off', '2', never, 1, 'bulk', true);
    expect(second).toMatchObject({ ok: false });
    expect(!second.ok && second.retryInMs).toBeGreaterThan(500);
  });

  it('makes a chat wait its interval after an attempt ends, other chats not', async () => {
    const l = limiter();
    await l.afterAttempt(db.pool, 'bot-b', '42');
    const same = await l.acquire(db.pool, 'bot-b', '42');
    expect(same.ok).toBe(false);
    if (!same.ok) expect(same.retryInMs).toBeGreaterThan(900);
    expect((await l.acquire(db.pool, 'bot-b', '43')).ok).toBe(true);
  });

  it('lets a group send 20 messages at 1/s, then one per 3 s (20/min)', async () => {
    const l = limiter();
    for (let i = 0; i < 20; i++) await l.afterAttempt(db.pool, 'bot-c', '-100500');
    const { rows } = await db.pool.query(
      `select extract(epoch from next_at - clock_timestamp()) * 1000 as ms from relay.outbound_chat_rate where bot_id = 'bot-c' and chat_id = '-100500'`,
    );
    // 20 charges at once: the 20/min bucket is full, so the next may go one emission interval (3 s) after the last
    expect(Number(rows[0].ms)).toBeGreaterThan(2_000);
    expect(Number(rows[0].ms)).toBeLessThan(3_100);
    await l.afterAttempt(db.pool, 'bot-c', '100500');
    const priv = await db.pool.query(
      `select extract(epoch from next_at - clock_timestamp()) * 1000 as ms from relay.outbound_chat_rate where chat_id = '100500'`,
    );
    expect(Number(priv.rows[0].ms)).toBeLessThan(1_000);
  });

  it('pushes a chat back by retry_after on a 429, and the whole bot when a second chat gets one', async () => {
    const l = limiter();
    await l.afterAttempt(db.pool, 'bot-d', '1', 3_000);
    const chat1 = await l.acquire(db.pool, 'bot-d', '1');
    expect(chat1).toMatchObject({ ok: false });
    if (!chat1.ok) expect(chat1.retryInMs).toBeGreaterThan(2_500);
    expect((await l.acquire(db.pool, 'bot-d', '2')).ok).toBe(true); // one chat limited: the bot flows on
    await l.afterAttempt(db.pool, 'bot-d', '3', 3_000); // another chat limited within the window: bot-level
    const aborted = AbortSignal.abort(); // take the slot without sleeping until it
    const other = await l.acquire(db.pool, 'bot-d', '4', aborted);
    expect(other).toMatchObject({ ok: true });
    if (other.ok) expect(other.waitedMs).toBeGreaterThan(2_500);
  });

  it("weakens no one else's commit: the session's synchronous_commit stays on, and so does a caller's transaction's", async () => {
    const l = limiter();
    const pool = createPool(db.url, { max: 1 });
    try {
      // on the pool the reservation is its own transaction, committed without waiting for the flush
      expect(await l.acquire(pool, 'bot-sync', '1', AbortSignal.abort())).toMatchObject({ ok: true });
      expect((await pool.query('show synchronous_commit')).rows[0].synchronous_commit).toBe('on');
      const client = await pool.connect();
      try {
        await client.query('begin');
        expect(await l.acquire(client, 'bot-sync', '2', AbortSignal.abort())).toMatchObject({ ok: true });
        expect((await client.query('show synchronous_commit')).rows[0].synchronous_commit).toBe('on');
        await client.query('commit');
      } finally {
        client.release();
      }
    } finally {
      await pool.end();
    }
  });

  it('reserves nothing beyond its horizon', async () => {
    const l = createOutboundRateLimiter(
      { ...OUTBOUND_RATE_LIMITS_DEFAULT, perBot: { count: 1, windowMs: 1000 } },
      { horizonMs: 1_500 },
    );
    const results = [];
    const never = new AbortController();
    never.abort(); // do not actually sleep for the slots
    for (let i = 0; i < 4; i++) results.push(await l.acquire(db.pool, 'bot-e', String(i), never.signal));
    expect(results.map((r) => r.ok)).toEqual([true, true, false, false]);
  });

  it('counts its waits, the seconds waited and the deferrals in the process registry (METRICS_PORT), by bot', async () => {
    const registry = createProcessRegistry({ defaultMetrics: false });
    const l = createOutboundRateLimiter(
      { ...OUTBOUND_RATE_LIMITS_DEFAULT, perBot: { count: 1, windowMs: 1000 } },
      { horizonMs: 1_500, metrics: rateLimitMetrics(registry) },
    );
    const never = new AbortController();
    never.abort(); // do not actually sleep for the slots
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await l.acquire(db.pool, 'bot-m', String(i), never.signal));
    expect(results.map((r) => r.ok)).toEqual([true, true, false, false]); // slots now and 1 s ahead; 2 s is beyond the horizon
    const waited = results.reduce((a, r) => a + (r.ok ? r.waitedMs : 0), 0);
    // another bot's send: its own series
    expect((await l.acquire(db.pool, 'bot-n', '1', never.signal)).ok).toBe(true);
    const fams = parsePrometheus(await registry.metrics());
    const value = (name: string, bot = 'bot-m') => fams.get(name)!.samples.find((x) => x.labels.bot_id === bot)?.value;
    expect(value('tg_relay_rate_limit_waits_total')).toBe(results.filter((r) => r.ok && r.waitedMs > 0).length);
    expect(value('tg_relay_rate_limit_waits_total')).toBeGreaterThanOrEqual(1);
    expect(value('tg_relay_rate_limit_wait_seconds_total')).toBeCloseTo(waited / 1000, 6);
    expect(value('tg_relay_rate_limit_deferred_total')).toBe(2);
    // bot-n's first send had its slot at once: no wait, no deferral, so no series of it
    expect(fams.get('tg_relay_rate_limit_waits_total')!.samples.map((x) => x.labels.bot_id)).toEqual(['bot-m']);
    expect(value('tg_relay_rate_limit_deferred_total', 'bot-n')).toBeUndefined();
  });

  it('does nothing in reactive mode', async () => {
    const l = createOutboundRateLimiter({ ...OUTBOUND_RATE_LIMITS_DEFAULT, mode: 'reactive' });
    await l.afterAttempt(db.pool, 'bot-f', '1');
    expect((await l.acquire(db.pool, 'bot-f', '1')).ok).toBe(true);
    const { rows } = await db.pool.query(`select * from relay.outbound_chat_rate where bot_id = 'bot-f'`);
    expect(rows).toHaveLength(0);
  });
});
