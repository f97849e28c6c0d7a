/**
 * bench/dispatch.ts, media replies: a handler replying with a text only vs a text and a 100 kB photo
 * uploaded from a buffer (test/fixtures/text-reply-bot.ts, photo-reply-bot.ts) in REPLY_MODE=outbound,
 * where both calls are committed with the handled mark (the upload stored with its row) and sent by
 * `outbound.send` after commit.
 *
 * Per handler and round: (1) reply latency, an open loop of single updates to fresh private chats at
 * `ratePerSecond` (far below the 30 msg/s per bot the relay paces to), timed from the bench's insert
 * COMMIT to the Bot API sandbox's arrival time of the update's first call (the text) and last call
 * (the photo; a chat's second message waits for its 1 msg/s slot, as on Telegram); (2) updates/s
 * dispatched, a burst over 1,000 chats until every row is handled (delivery goes on behind it).
 *
 * It needs the relayed sends (every relayed method captured into relay.outbound, uploads included,
 * and sent with its own method): without them it prints "media: needs relayed sends" and skips.
 */
import type { Pool } from '../../libs/db';
import { QUEUES } from '../../libs/db';
import type { BotApiSandbox } from '../../libs/sandbox';
import { burstRate, CHATS, insertUpdates, log, resetInbox, TOKEN, withWorkers } from './dispatch-fleet';
import { fmt, median, pct } from './worker-process';

interface Variant {
  name: string;
  handlers: string;
  calls: number;
}

const VARIANTS: Variant[] = [
  { name: 'text', handlers: 'test/fixtures/text-reply-bot.ts', calls: 1 },
  { name: 'text + 100 kB photo', handlers: 'test/fixtures/photo-reply-bot.ts', calls: 2 },
];

export interface MediaRepliesOptions {
  url: string;
  pool: Pool;
  sandbox: BotApiSandbox;
  rounds: number;
  burst: number;
  samples: number;
  ratePerSecond: number;
}

interface Sample {
  rate: number;
  first: number[];
  last: number[];
}

/** relay.outbound has a column for the relayed method only once relayed sends exist. */
async function hasRelayedSends(pool: Pool): Promise<boolean> {
  const { rows } = await pool.query(
    `select 1 from information_schema.columns where table_schema = 'relay' and table_name = 'outbound' and column_name = 'method'`,
  );
  return rows.length > 0;
}

async function resetOutbound(pool: Pool): Promise<void> {
  await pool.query(`truncate relay.outbound cascade`);
  await pool.query(`delete from tg_relay_boss.job where name = $1`, [QUEUES.outbound]);
  await resetInbox(pool);
}

/** Inserts an open loop of single updates to fresh chats; returns when each COMMIT was acknowledged. */
async function openLoop(o: MediaRepliesOptions, chatBase: number): Promise<number[]> {
  const committedAt: number[] = [];
  const t0 = Date.now();
  for (let i = 0; i < o.samples; i++) {
    const wait = t0 + (i * 1000) / o.ratePerSecond - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    await insertUpdates(o.pool, 1, { first: chatBase + i, chats: 1, chatBase: chatBase + i });
    committedAt.push(Date.now());
  }
  return committedAt;
}

/** Waits until every inserted update is handled; names the first error if they are not. */
async function waitHandled(pool: Pool, n: number, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const { rows } = await pool.query(
      `select count(*) filter (where state = 'handled')::int as handled, max(last_error) as error from relay.inbox`,
    );
    if (rows[0].handled >= n) return;
    if (Date.now() > deadline)
      throw new Error(`${what}: ${rows[0].handled}/${n} handled (last error: ${rows[0].error})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The photo variant must have stored its upload as a relayed sendPhoto row, not sent it directly. */
async function photosRelayed(pool: Pool): Promise<boolean> {
  const { rows } = await pool.query(`select count(*)::int as n from relay.outbound where method = 'sendPhoto'`);
  return rows[0].n > 0;
}

/** Per update of the open loop, ms from its COMMIT to the sandbox's arrival of its first and last call. */
async function replyTimes(o: MediaRepliesOptions, v: Variant, chatBase: number, committedAt: number[]) {
  const ours = (chat: number) => chat >= chatBase && chat < chatBase + o.samples;
  const callsOf = () => o.sandbox.calls(TOKEN).filter((c) => c.status === 200 && ours(Number(c.params.chat_id)));
  const deadline = Date.now() + 120_000;
  while (callsOf().length < o.samples * v.calls) {
    if (Date.now() > deadline)
      throw new Error(`${v.name}: only ${callsOf().length}/${o.samples * v.calls} replies reached the Bot API`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const byChat = new Map<number, number[]>();
  for (const c of callsOf()) {
    const chat = Number(c.params.chat_id);
    byChat.set(chat, [...(byChat.get(chat) ?? []), c.time]);
  }
  const first: number[] = [];
  const last: number[] = [];
  committedAt.forEach((t, i) => {
    const times = (byChat.get(chatBase + i) as number[]).sort((a, b) => a - b);
    first.push(times[0] - t);
    last.push(times[times.length - 1] - t);
  });
  return { first, last };
}

async function measureVariant(o: MediaRepliesOptions, v: Variant, chatBase: number): Promise<Sample | 'not relayed'> {
  await resetOutbound(o.pool);
  const env = { REPLY_MODE: 'outbound', DISPATCH_ORDERING: 'chat' };
  return withWorkers({ url: o.url, apiRoot: o.sandbox.url, handlers: v.handlers, env }, async () => {
    const committedAt = await openLoop(o, chatBase);
    await waitHandled(o.pool, o.samples, v.name);
    if (v.calls > 1 && !(await photosRelayed(o.pool))) return 'not relayed';
    const { first, last } = await replyTimes(o, v, chatBase, committedAt);
    await resetOutbound(o.pool);
    const rate = await burstRate(o.pool, o.burst);
    return { rate, first, last };
  });
}

function printSummary(results: Map<string, Sample[]>): void {
  const baseRate = median((results.get('text') as Sample[]).map((s) => s.rate));
  log('\n| reply | updates/s dispatched | vs text | first call p50 / p90 | last call p50 / p90 |');
  log('| --- | --- | --- | --- | --- |');
  for (const v of VARIANTS) {
    const s = results.get(v.name) as Sample[];
    const rate = median(s.map((x) => x.rate));
    const at = (k: 'first' | 'last', p: number) => `${fmt(median(s.map((x) => pct(x[k], p))))} ms`;
    log(
      `| ${v.name} | ${fmt(rate)} | ${fmt(rate / baseRate, 2)}× | ${at('first', 50)} / ${at('first', 90)} | ${at('last', 50)} / ${at('last', 90)} |`,
    );
  }
}

/** Runs the media-replies section, or prints why it cannot run on this checkout. */
export async function mediaReplies(o: MediaRepliesOptions): Promise<void> {
  log(
    `\nmedia replies (REPLY_MODE=outbound), 1 worker; throughput: ${fmt(o.burst)} updates over ${fmt(CHATS)} chats, until handled;`,
  );
  log(
    `reply latency: ${o.samples} single updates at ${o.ratePerSecond}/s to fresh chats, insert COMMIT → the Bot API sandbox receives the call; ${o.rounds} round(s), medians`,
  );
  if (!(await hasRelayedSends(o.pool))) {
    log('media: needs relayed sends (relay.outbound has no method column): skipped');
    return;
  }
  const results = new Map<string, Sample[]>();
  let chatBase = 3_000_000;
  for (let round = 0; round < o.rounds; round++) {
    const order = round % 2 === 0 ? [...VARIANTS].reverse() : VARIANTS;
    for (const v of order) {
      const s = await measureVariant(o, v, (chatBase += 100_000));
      if (s === 'not relayed') {
        log('media: needs relayed sends (the photo was not captured into relay.outbound): skipped');
        return;
      }
      (results.get(v.name) ?? results.set(v.name, []).get(v.name))?.push(s);
      log(
        `  round ${round + 1}: ${v.name.padEnd(19)} ${fmt(s.rate).padStart(6)} updates/s, first call p50 ${fmt(pct(s.first, 50))} ms, last call p50 ${fmt(pct(s.last, 50))} ms`,
      );
    }
  }
  printSummary(results);
}
