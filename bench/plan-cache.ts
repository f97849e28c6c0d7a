/**
 * Why the ingress batch statement keeps PostgreSQL's own plan choice (docs/dispatch.md, "Statements
 * prepared once"). Each mode runs on its own fresh connection, in turn, on one database:
 *   (a) growth: from empty tables, `batches` (300) batches of 100 updates per mode, no ANALYZE:
 *       ms per batch over each 50 batches, "auto" (PostgreSQL chooses; custom plans here) against
 *       a forced generic plan (made while the tables were small, kept until an ANALYZE);
 *   (b) after ANALYZE: one-update batches, auto against generic, p50/p99;
 *   (c) the claim statement the same way: its plan made at 200 captures against a fresh one, after
 *       the table grew to 300,000 without ANALYZE.
 * Both ingress modes pay the same extra SET LOCAL round trip.
 *
 *   npx tsx bench/plan-cache.ts [batches=300]
 */
import { createCaptureStore } from '../libs/captures/deliver';
import { createBoss, createPool, type Pool, QUEUES, withTransaction } from '../libs/db';
import { persistInTransaction } from '../libs/ingress/persist-batch';
import { planBatch } from '../libs/ingress/plan-batch';
import { cursorAcquire, cursorEnsure } from '../libs/ingress/queries';
import { bulkCaptures } from './support/captures';
import { benchDatabase } from './support/database';
import { messageUpdates } from './support/updates';
import { loadAverage, pct } from './support/worker-process';

const BATCHES = Number(process.argv[2] ?? 300);
const MODES = { auto: 'auto', generic: 'force_generic_plan' } as const;
type Mode = keyof typeof MODES;

async function main(): Promise<void> {
  const db = await benchDatabase();
  const boss = createBoss(db.url, { max: 1 });
  const pools: Record<Mode, Pool> = { auto: createPool(db.url, { max: 1 }), generic: createPool(db.url, { max: 1 }) };
  try {
    console.log(`plan cache: load average ${loadAverage()} (2 cores)`);
    const opts = {} as Record<Mode, Parameters<typeof persistInTransaction>[3]>;
    for (const mode of Object.keys(MODES) as Mode[]) {
      const botId = mode === 'auto' ? '4201' : '4202';
      await cursorEnsure(db.pool, botId);
      const g = await cursorAcquire(db.pool, botId, 'bench', 3_600_000);
      opts[mode] = {
        botId,
        fence: { owner: 'bench', generation: g!.generation },
        leaseTtlMs: 3_600_000,
        allowedChatIds: new Set<string>(),
        dispatchUnauthorized: false,
        halt: null,
      };
    }
    let id = 1;
    const batch = async (mode: Mode, size: number) => {
      const plan = planBatch(messageUpdates(id, size), { policy: 'stop', offset: id, transport: 'polling' });
      id += size;
      const t0 = performance.now();
      await withTransaction(pools[mode], async (c) => {
        await c.query(`set local plan_cache_mode = ${MODES[mode]}`);
        await persistInTransaction(c, boss, plan, opts[mode]);
      });
      return performance.now() - t0;
    };

    console.log(`(a) batches of 100 from empty tables, no ANALYZE: ms per batch`);
    for (let done = 0; done < BATCHES; done += 50) {
      const ms: Record<Mode, number[]> = { auto: [], generic: [] };
      for (let i = 0; i < 50; i++)
        for (const mode of ['auto', 'generic'] as const) ms[mode].push(await batch(mode, 100));
      console.log(
        `  batches ${done + 1}-${done + 50} (${done * 200 + 1}-${(done + 50) * 200} updates stored): auto p50 ${pct(ms.auto, 50).toFixed(1)}, generic p50 ${pct(ms.generic, 50).toFixed(1)}`,
      );
    }

    await db.pool.query('analyze');
    console.log(`(b) batches of 1 beside ${id - 1} stored updates, after ANALYZE`);
    const one: Record<Mode, number[]> = { auto: [], generic: [] };
    for (let i = 0; i < 120; i++)
      for (const mode of ['auto', 'generic'] as const) {
        const t = await batch(mode, 1);
        if (i >= 20) one[mode].push(t);
      }
    for (const mode of ['auto', 'generic'] as const)
      console.log(
        `  ${mode.padEnd(7)} p50 ${pct(one[mode], 50).toFixed(2)} ms  p99 ${pct(one[mode], 99).toFixed(2)} ms`,
      );
    console.log(`  generic / auto p50: ${(pct(one.generic, 50) / pct(one.auto, 50)).toFixed(2)}x`);

    await claimPlans(db.pool, db.url);
  } finally {
    await Promise.all(Object.values(pools).map((p) => p.end()));
    await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
    await db.close();
  }
}

/** (c) the capture claim (100 rows, rolled back): a plan made on a small table against a fresh one. */
async function claimPlans(pool: Pool, url: string): Promise<void> {
  const store = createCaptureStore();
  const claim = async (p: Pool, reps: number) => {
    const out: number[] = [];
    for (let i = 0; i < reps; i++)
      await withTransaction(p, async (c) => {
        const t0 = performance.now();
        await store.claim(c, { limit: 100, workerId: 'bench', now: null, queue: QUEUES.capture });
        out.push(performance.now() - t0);
        throw ROLLBACK;
      }).catch((err) => {
        if (err !== ROLLBACK) throw err;
      });
    return pct(out, 50);
  };
  await pool.query(`truncate relay.captures, relay.attempts`);
  await pool.query(`delete from tg_relay_boss.job where name = $1`, [QUEUES.capture]);
  const early = createPool(url, { max: 1 });
  const fresh = createPool(url, { max: 1 });
  try {
    await bulkCaptures(pool, 200, 0);
    await claim(early, 10);
    await bulkCaptures(pool, 300_000, 200);
    const [e, f] = [await claim(early, 20), await claim(fresh, 20)];
    console.log(
      `(c) capture claim of 100 beside 300,200 without ANALYZE: plan made at 200 rows p50 ${e.toFixed(2)} ms, fresh plan ${f.toFixed(2)} ms`,
    );
  } finally {
    await early.end();
    await fresh.end();
  }
}
const ROLLBACK = new Error('rollback');

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
