/**
 * Admin API load test: req/s and latency percentiles of GET /v1/stats with 1,000,000 rows in
 * relay.captures (target: p99 ≤ 50 ms), over a real socket on loopback with autocannon.
 *
 * Data: 1M captures — 970k delivered and 25k failed (both above the exact-count cap of 10,000, so
 * reported from planner statistics), 5k pending, 100 delivering — 200k attempts of which 3,000 in
 * the last minute, and a cursor row. VACUUM ANALYZE afterwards, as autovacuum would.
 * Also prints what exact counting would cost (`count(*) group by state`) for comparison. Runs once
 * with 1 connection (each request computes its stats) and once with --connections (default 10).
 *
 * PostgreSQL is embedded unless DATABASE_URL is set. Usage:
 *   npx tsx bench/admin.ts [--rows 1000000] [--seconds 10] [--connections 10]
 */
import autocannon from 'autocannon';
import { buildAdminApp } from '../libs/admin/app';
import { loadConfig } from '../libs/config';
import { createBoss } from '../libs/db';
import { silentLogger } from '../libs/observability/logger';
import { benchDatabase } from './support/database';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}

const ROWS = arg('rows', 1_000_000);
const SECONDS = arg('seconds', 10);
const CONNECTIONS = arg('connections', 10);
const TOKEN = 'bench-admin-token-0123456789';

async function main(): Promise<void> {
  const db = await benchDatabase();
  const boss = createBoss(db.url, { max: 2 });
  await boss.start();
  try {
    const t0 = Date.now();
    const delivering = 100;
    const pending = Math.min(5_000, Math.floor(ROWS * 0.005));
    const failed = Math.floor(ROWS * 0.025);
    // one statement: state by position, timestamps spread over the last 30 days
    await db.pool.query(
      `insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, from_id, text, payload, payload_sha256, state,
                                   attempts, started_at, last_error, failed_reason, created_at, updated_at, delivered_at)
       select 'telegram:' || g || ':' || (g % 500) || ':' || g, '1000000001', g, g % 500, g, g % 500, 'bench',
              jsonb_build_object('update_id', g, 'text', 'bench'), md5(g::text),
              s.state,
              case when s.state = 'pending' then 0 else 1 end,
              case when s.state = 'delivering' then now() end,
              case when s.state = 'failed' then 'HTTP 400 from collector' end,
              case when s.state = 'failed' then 'terminal: HTTP 400' end,
              now() - ((${ROWS} - g) * interval '30 days' / ${ROWS}), now(),
              case when s.state = 'delivered' then now() end
         from generate_series(1, ${ROWS}) g
         cross join lateral (select case when g <= ${delivering} then 'delivering'
                                         when g <= ${delivering + pending} then 'pending'
                                         when g <= ${delivering + pending + failed} then 'failed'
                                         else 'delivered' end as state) s`,
    );
    await db.pool.query(
      `insert into relay.attempts (subject, subject_id, subject_key, attempt, worker_id, started_at, finished_at, duration_ms, outcome, http_status)
       select 'capture', g, 'k' || g, 1, 'w', ts, ts + interval '20 ms', 20, case when g % 50 = 0 then 'retry' else 'delivered' end, 200
         from generate_series(1, 200000) g
         cross join lateral (select case when g <= 3000 then now() - (g * interval '15 ms') else now() - interval '1 hour' - g * interval '1 second' end as ts) t`,
    );
    await db.pool.query(
      `insert into relay.cursor (bot_id, next_offset, lease_owner, lease_generation, lease_expires_at, progress_generation, progress_at)
       values ('1000000001', ${ROWS + 1}, 'bench-poller', 1, now() + interval '1 hour', 1, now())`,
    );
    await db.pool.query('vacuum analyze relay.captures');
    await db.pool.query('vacuum analyze relay.attempts');
    console.log(
      `seeded ${ROWS.toLocaleString()} captures and 200,000 attempts in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
    );

    const exact: number[] = [];
    for (let i = 0; i < 5; i++) {
      const s = process.hrtime.bigint();
      await db.pool.query('select state, count(*) from relay.captures group by state');
      exact.push(Number(process.hrtime.bigint() - s) / 1e6);
    }
    console.log(
      `for comparison, exact "count(*) group by state" on 1 client: median ${exact.sort((a, b) => a - b)[2].toFixed(1)} ms`,
    );

    const config = loadConfig({ ADMIN_TOKEN: TOKEN, LOG_LEVEL: 'silent', POLL_TIMEOUT: '25s' });
    const app = await buildAdminApp({ pool: db.pool, boss, config, logger: silentLogger() });
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const sample = await (
        await fetch(`${address}/v1/stats`, { headers: { authorization: `Bearer ${TOKEN}` } })
      ).json();
      const states = (
        sample as { kinds: { captures: { states: Record<string, { count: number; approximate: boolean }> } } }
      ).kinds.captures.states;
      console.log('captures by state (exact up to 10,000):', JSON.stringify(states));

      // 1 connection: every request computes its own stats; N connections: concurrent requests
      // share one computation (statsCollector coalesces them), which is what a busy dashboard sees.
      let last: autocannon.Result | undefined;
      for (const connections of [1, CONNECTIONS]) {
        const result = await autocannon({
          url: `${address}/v1/stats`,
          headers: { authorization: `Bearer ${TOKEN}` },
          connections,
          duration: SECONDS,
          warmup: { connections: Math.min(2, connections), duration: 1 },
        } as autocannon.Options);
        const errors = result.errors + result.timeouts + result.non2xx;
        console.log(
          `GET /v1/stats, ${connections} connection(s), ${SECONDS} s on loopback: ${result.requests.average.toFixed(0)} req/s, ` +
            `latency p50 ${result.latency.p50} ms, p90 ${result.latency.p90} ms, p99 ${result.latency.p99} ms, max ${result.latency.max} ms; ` +
            `${result.requests.total} requests, ${errors} errors`,
        );
        last = result;
      }
      const result = last!;
      console.log(result.latency.p99 <= 50 ? 'p99 within the 50 ms target' : 'p99 ABOVE the 50 ms target');
    } finally {
      await app.close();
    }
  } finally {
    await boss.stop({ graceful: false, wait: true });
    await db.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
