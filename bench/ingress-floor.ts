/**
 * What the parts of an ingress batch cost alone (docs/ingress.md, "Batch cost"): the same 100
 * message updates per batch as bench/ingress-breakdown.ts, on a fresh database, BEGIN → COMMIT
 * acknowledged, p50/p99 over the run, for:
 *   full          the real batch (persistBatch: cursor, inbox, captures, ledger jobs, notify)
 *   no ledger jobs  the batch without its pg-boss job rows: cursor, inbox rows and captures
 *   inbox+cursor  the fenced cursor step and the inbox rows only (no captures, no job rows)
 *   inbox, no on conflict  the same, absent rows found by an anti-join instead of ON CONFLICT
 *   bare          100 rows of the raw json into a table with a bigint key: the server's floor for a
 *                 durable 100-row commit here
 * Variants run interleaved (one batch of each in turn), so machine load hits them alike.
 *
 *   npx tsx bench/ingress-floor.ts [batches=200]
 */
import { buildCapture } from '../libs/captures/build';
import { createBoss } from '../libs/db';
import { persistBatch } from '../libs/ingress/persist-batch';
import { planBatch } from '../libs/ingress/plan-batch';
import { cursorAcquire, cursorEnsure } from '../libs/ingress/queries';
import { newJobId } from '../libs/queue/enqueue';
import { benchDatabase } from './support/database';
import { messageUpdates } from './support/updates';
import { loadAverage, pct } from './support/worker-process';

const BATCHES = Number(process.argv[2] ?? 200);
const WARMUP = 20;

const INBOX_ONLY = `with cur as (
    update relay.cursor set next_offset = greatest(next_offset, $4::bigint), progress_generation = $3::bigint, progress_at = clock_timestamp(),
           lease_expires_at = clock_timestamp() + interval '1 hour', updated_at = clock_timestamp()
     where bot_id = $1::text and lease_owner = $2::text and lease_generation = $3::bigint
    returning 1)
  insert into relay.inbox (bot_id, update_id, update_type, chat_id, authorized, payload, raw, state, job_id, generation)
  select $1::text, u.update_id, u.update_type, u.chat_id, true, u.payload::jsonb, u.raw::json, 'pending', u.job_id, $3::bigint
    from unnest($5::bigint[], $6::text[], $7::bigint[], $8::uuid[], $9::text[], $10::text[]) as u(update_id, update_type, chat_id, job_id, raw, payload)
   where exists (select from cur)
  on conflict (bot_id, update_id, update_epoch) do nothing`;

/** inbox+cursor and the captures (what the batch writes without its ledger job rows), as the batch statement writes them. */
const INBOX_CAPTURES = INBOX_ONLY.replace(
  'on conflict (bot_id, update_id, update_epoch) do nothing',
  `on conflict (bot_id, update_id, update_epoch) do nothing returning id), cins as (
  insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, from_id, text, message_date, payload, payload_raw, payload_sha256, job_id)
  select x.capture_key, $1::text, x.update_id, x.chat_id, x.message_id, x.from_id, x.text, to_timestamp(x.message_date), x.payload_raw::jsonb, x.payload_raw::json, x.payload_sha256, x.job_id
    from unnest($11::text[], $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[], $16::text[], $17::bigint[], $18::text[], $19::text[], $20::uuid[])
      as x(capture_key, update_id, chat_id, message_id, from_id, text, message_date, payload_raw, payload_sha256, job_id)
   where exists (select from cur)
  on conflict (capture_key) do nothing returning id)
  select (select count(*) from ins) + (select count(*) from cins)`,
).replace(/\n {2}insert into relay.inbox/, ', ins as (\n  insert into relay.inbox');

/** The same without ON CONFLICT (speculative insertion): absent rows found by an anti-join, as the cursor lock serializes a bot's writers. */
const INBOX_PLAIN = INBOX_ONLY.replace(
  'where exists (select from cur)\n  on conflict (bot_id, update_id, update_epoch) do nothing',
  'where exists (select from cur) and not exists (select from relay.inbox i where i.bot_id = $1::text and i.update_id = u.update_id)',
);

async function main(): Promise<void> {
  const db = await benchDatabase();
  try {
    await measure(db);
  } finally {
    await db.close(); // the bench database is dropped even when a variant fails
  }
}

async function measure(db: Awaited<ReturnType<typeof benchDatabase>>): Promise<void> {
  const boss = createBoss(db.url, { max: 1 });
  await db.pool.query('create table public.bare (id bigint primary key, raw json not null)');
  const bots = { full: '4242', inbox: '4343', plain: '4444', captures: '4545', nojobs: '4646' };
  const fences: Record<string, { owner: string; generation: number }> = {};
  for (const [k, botId] of Object.entries(bots)) {
    await cursorEnsure(db.pool, botId);
    const g = await cursorAcquire(db.pool, botId, 'bench', 3_600_000);
    fences[k] = { owner: 'bench', generation: g!.generation };
  }
  const ms: Record<
    'full' | 'full minus job rows' | 'no ledger jobs' | 'inbox+cursor' | 'inbox, no on conflict' | 'bare',
    number[]
  > = {
    full: [],
    'full minus job rows': [],
    'no ledger jobs': [],
    'inbox+cursor': [],
    'inbox, no on conflict': [],
    bare: [],
  };
  const client = await db.pool.connect();
  // the real batch statement with its ledger job rows cut out (counted from the rows instead)
  const noJobsPool = Object.create(db.pool) as typeof db.pool;
  (noJobsPool as unknown as { connect: () => Promise<unknown> }).connect = async () => {
    const c = await db.pool.connect();
    const q = c.query.bind(c) as (...a: unknown[]) => Promise<unknown>;
    return Object.assign(Object.create(c) as object, {
      query: (cfg: unknown, ...rest: unknown[]) => {
        if (typeof cfg === 'object' && cfg && (cfg as { name?: string }).name === 'relay_ingress_batch') {
          const t = (cfg as { text: string }).text;
          const text = t
            .replace(
              /jobs as \(\s*insert into[\s\S]*?returning name\s*\)/,
              'jobs as (select null::text as name where false)',
            )
            .replace(
              /\(select count\(\*\) from jobs where name = 'update.dispatch'\)/,
              '(select count(*) from ins where job_id is not null)',
            )
            .replace(/\(select count\(\*\) from jobs where name = 'capture.deliver'\)/, '(select count(*) from cins)');
          if (text === t) throw new Error('the batch statement changed: update the no-jobs rewrite');
          return q({ ...cfg, name: 'floor_nojobs', text }, ...rest);
        }
        return q(cfg, ...rest);
      },
      release: (...a: unknown[]) => (c.release as (...x: unknown[]) => void)(...a),
    });
  };
  let id = 1;
  for (let b = 0; b < BATCHES + WARMUP; b++) {
    const first = id;
    const items = messageUpdates(first);
    id += 100;
    const keep = b >= WARMUP;
    // full
    const plan = planBatch(items, { policy: 'stop', offset: first, transport: 'polling' });
    let t0 = performance.now();
    await persistBatch({ pool: db.pool, boss }, plan, {
      botId: bots.full,
      fence: fences.full,
      leaseTtlMs: 3_600_000,
      allowedChatIds: new Set(),
      dispatchUnauthorized: false,
      halt: null,
    });
    if (keep) ms.full.push(performance.now() - t0);
    t0 = performance.now();
    await persistBatch({ pool: noJobsPool, boss }, plan, {
      botId: bots.nojobs,
      fence: fences.nojobs,
      leaseTtlMs: 3_600_000,
      allowedChatIds: new Set(),
      dispatchUnauthorized: false,
      halt: null,
    });
    if (keep) ms['full minus job rows'].push(performance.now() - t0);
    const u = plan.updates;
    for (const [label, bot, name, text] of [
      ['inbox+cursor', 'inbox', 'floor_inbox', INBOX_ONLY],
      ['inbox, no on conflict', 'plain', 'floor_plain', INBOX_PLAIN],
      ['no ledger jobs', 'captures', 'floor_captures', INBOX_CAPTURES],
    ] as const) {
      t0 = performance.now(); // building the captures counts, as in persistBatch
      const caps =
        bot === 'captures'
          ? u.map((x) =>
              buildCapture({ botId: bots.captures, updateId: x.updateId, type: x.type, message: x.message! }),
            )
          : [];
      await client.query('begin');
      await client.query({
        name,
        text,
        values: [
          bots[bot],
          fences[bot].owner,
          fences[bot].generation,
          id,
          u.map((x) => x.updateId),
          u.map((x) => x.type),
          u.map((x) => x.chatId),
          u.map(() => newJobId()),
          u.map((x) => x.raw),
          u.map((x) => x.payloadJson),
          ...(caps.length
            ? [
                caps.map((c) => c.key),
                caps.map((c) => c.updateId),
                caps.map((c) => c.chatId),
                caps.map((c) => c.messageId),
                caps.map((c) => c.fromId),
                caps.map((c) => c.storedText),
                caps.map((c) => c.date),
                caps.map((c) => c.payloadJson),
                caps.map((c) => c.sha256),
                caps.map(() => newJobId()),
              ]
            : []),
        ],
      });
      await client.query('commit');
      if (keep) ms[label].push(performance.now() - t0);
    }
    // bare
    t0 = performance.now();
    await client.query('begin');
    await client.query({
      name: 'floor_bare',
      text: 'insert into public.bare (id, raw) select u.id, u.raw::json from unnest($1::bigint[], $2::text[]) as u(id, raw)',
      values: [u.map((x) => x.updateId), u.map((x) => x.raw)],
    });
    await client.query('commit');
    if (keep) ms.bare.push(performance.now() - t0);
  }
  client.release();
  const load = loadAverage();
  console.log(`${BATCHES} batches of 100 message updates per variant, interleaved; load average ${load}`);
  for (const [k, xs] of Object.entries(ms))
    console.log(
      `${k.padEnd(22)} BEGIN → COMMIT acknowledged p50 ${pct(xs, 50).toFixed(2)} ms, p99 ${pct(xs, 99).toFixed(2)} ms`,
    );
  await boss.stop({ graceful: false, wait: false }).catch(() => undefined);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
