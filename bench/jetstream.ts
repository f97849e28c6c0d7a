/**
 * JetStream bridge benchmark: 3 `tg-relay jetstream` processes on one durable consumer, against the
 * local NATS server (NATS_URL, default nats://127.0.0.1:4222) and PostgreSQL.
 *   1. throughput: a backlog of N messages is published (pipelined) before the bridges start; then
 *      messages/s from the bridges being bound to the last committed relay.outbound row, for each
 *      NATS_BATCH given (1 = one transaction per message, vs batches sharing one transaction). The
 *      publisher's own rate is printed too: on a live stream the slower of the two is the rate;
 *   2. added latency: publish at a steady rate well below capacity; for each message, the time from
 *      just before js.publish to the moment its row is visible committed (the enqueue's NOTIFY is
 *      delivered at commit; rows found after each NOTIFY are stamped with its arrival), p50/p99.
 * Checks every run: each msg_id exactly once in relay.outbound and one pg-boss job each.
 *
 * PostgreSQL is embedded unless DATABASE_URL is set.
 * Usage: npx tsx bench/jetstream.ts [--messages 10000] [--bridges 3] [--batches 1,100] [--rate 200] [--seconds 10] [--chats 500]
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { seedStreamConfig } from '../libs/jetstream/bridge';
import { benchDatabase } from './support/database';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? String(process.argv[i + 1]) : fallback;
}

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const MESSAGES = Number(arg('messages', '10000'));
const BRIDGES = Number(arg('bridges', '3'));
const BATCHES = arg('batches', '1,100').split(',').map(Number);
const RATE = Number(arg('rate', '200'));
const SECONDS = Number(arg('seconds', '10'));
const CHATS = Number(arg('chats', '500'));
const CLI = path.resolve(__dirname, '../bin/tg-relay.js');

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function waitUntil(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function scenario(batch: number) {
  const db = await benchDatabase();
  const id = crypto.randomBytes(4).toString('hex').toUpperCase();
  const stream = `TGRBENCH_${id}`;
  const subject = `tgrbench.${id.toLowerCase()}.outbound`;
  const nc = await connect({ servers: NATS_URL });
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  await jsm.streams.add(seedStreamConfig(stream, subject));
  // 1. throughput: a backlog of MESSAGES waits in the stream; the bridges start and drain it
  const t0 = performance.now();
  for (let from = 0; from < MESSAGES; from += 500) {
    const n = Math.min(500, MESSAGES - from);
    await Promise.all(
      Array.from({ length: n }, (_, k) => from + k).map((i) =>
        js.publish(
          subject,
          JSON.stringify({ msg_id: `tp-${i}`, chat_id: 10_000 + (i % CHATS), text: `throughput ${i}`, kind: 'bench' }),
          { msgID: `tp-${i}` },
        ),
      ),
    );
  }
  const publishSeconds = (performance.now() - t0) / 1000;
  const bridges: ChildProcess[] = [];
  const listener = new Client({ connectionString: db.url });
  try {
    const outputs: string[] = [];
    for (let b = 0; b < BRIDGES; b++) {
      const child = spawn(process.execPath, [CLI, 'jetstream'], {
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          LOG_LEVEL: 'info',
          DATABASE_URL: db.url,
          NATS_URL,
          NATS_STREAM: stream,
          NATS_SUBJECT: subject,
          NATS_ALERT_SUBJECT: `tgrbench.${id.toLowerCase()}.alerts`,
          NATS_CONSUMER: 'bench',
          NATS_BATCH: String(batch),
          JETSTREAM_HEALTH_PORT: '0',
          TELEGRAM_BOT_TOKEN: '9191:bench-token-not-a-secret',
          OPS_CHAT_ID: '-100919',
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      outputs[b] = '';
      child.stdout.on('data', (d) => (outputs[b] += d));
      bridges.push(child);
    }
    // the clock starts when the first bridge consumes
    await waitUntil(() => outputs.some((o) => o.includes('jetstream bridge bound')), 60_000, 'a bridge bound');
    const tBound = performance.now();
    await waitUntil(() => outputs.every((o) => o.includes('jetstream bridge bound')), 60_000, 'bridges bound');
    const count = async () => Number((await db.pool.query('select count(*)::int as n from relay.outbound')).rows[0].n);
    await waitUntil(async () => (await count()) >= MESSAGES, 600_000, 'backlog committed');
    const drainSeconds = (performance.now() - tBound) / 1000;
    const throughput = {
      publishSeconds,
      publishRate: MESSAGES / publishSeconds,
      drainSeconds,
      rate: MESSAGES / drainSeconds,
    };

    // 2. added latency at a steady rate
    await listener.connect();
    await listener.query('listen tg_relay_work');
    const sentAt = new Map<string, number>();
    const seenAt = new Map<string, number>();
    const base = Number((await db.pool.query('select coalesce(max(id), 0)::int8 as m from relay.outbound')).rows[0].m);
    // one scan at a time; notifications during a scan ask for one more. Rows are stamped with the
    // scan's start (an upper bound of when they became visible: a row committed with a lower id
    // after a higher one is still found, which an id cursor would miss)
    let scanning = false;
    let again = false;
    const scan = async () => {
      if (scanning) {
        again = true;
        return;
      }
      scanning = true;
      try {
        do {
          again = false;
          const at = performance.now();
          const { rows } = await db.pool.query('select msg_id from relay.outbound where id > $1', [base]);
          for (const r of rows) if (!seenAt.has(r.msg_id)) seenAt.set(r.msg_id, at);
        } while (again);
      } finally {
        scanning = false;
      }
    };
    listener.on('notification', () => void scan());
    const total = RATE * SECONDS;
    const start = performance.now();
    const pubs: Promise<unknown>[] = [];
    for (let i = 0; i < total; i++) {
      const due = start + (i * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const msgId = `lat-${i}`;
      sentAt.set(msgId, performance.now());
      pubs.push(
        js.publish(subject, JSON.stringify({ msg_id: msgId, chat_id: 20_000 + (i % CHATS), text: `latency ${i}` }), {
          msgID: msgId,
        }),
      );
    }
    await Promise.all(pubs);
    await waitUntil(
      async () => {
        await scan();
        return seenAt.size >= total;
      },
      120_000,
      'latency messages committed',
    );
    const lat = [...sentAt].map(([k, t]) => seenAt.get(k)! - t).sort((a, b) => a - b);

    // exactly once
    const dup = Number(
      (
        await db.pool.query(
          'select count(*)::int as n from (select msg_id from relay.outbound group by msg_id having count(*) > 1) d',
        )
      ).rows[0].n,
    );
    const rows = await count();
    const jobs = Number(
      (await db.pool.query(`select count(*)::int as n from tg_relay_boss.job where name = 'outbound.send'`)).rows[0].n,
    );
    return {
      batch,
      bridges: BRIDGES,
      throughput,
      latency: { messages: total, ratePerS: RATE, p50: pct(lat, 50), p99: pct(lat, 99), max: lat[lat.length - 1] },
      check: { rows, expected: MESSAGES + total, duplicates: dup, jobs },
      // batches rolled back and naked (deadlocks between bridges, database errors)
      naked: outputs.reduce(
        (n, o) => n + o.split('\n').filter((l) => l.includes('jetstream batch not committed')).length,
        0,
      ),
    };
  } finally {
    for (const b of bridges) b.kill('SIGTERM');
    await Promise.all(bridges.map((b) => new Promise((r) => (b.exitCode !== null ? r(null) : b.once('exit', r)))));
    await listener.end().catch(() => undefined);
    await jsm.streams.delete(stream).catch(() => undefined);
    await nc.close();
    await db.close();
  }
}

async function main() {
  const results = [];
  for (const batch of BATCHES) {
    const r = await scenario(batch);
    results.push(r);
    process.stdout.write(
      `NATS_BATCH=${r.batch} bridges=${r.bridges}: backlog of ${MESSAGES} drained into relay.outbound at ${r.throughput.rate.toFixed(0)} msg/s ` +
        `(${r.throughput.drainSeconds.toFixed(2)} s; the publisher alone: ${r.throughput.publishRate.toFixed(0)} msg/s); ` +
        `added latency at ${r.latency.ratePerS}/s: p50 ${r.latency.p50.toFixed(1)} ms, p99 ${r.latency.p99.toFixed(1)} ms, max ${r.latency.max.toFixed(1)} ms; ` +
        `rows ${r.check.rows}/${r.check.expected}, duplicates ${r.check.duplicates}, jobs ${r.check.jobs}, batches naked ${r.naked}\n`,
    );
  }
  const bad = results.filter(
    (r) => r.check.rows !== r.check.expected || r.check.duplicates !== 0 || r.check.jobs !== r.check.rows,
  );
  if (bad.length) {
    process.stderr.write('FAILED: not exactly once\n');
    process.exitCode = 1;
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
