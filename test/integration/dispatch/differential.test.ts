/**
 * The differential test: a real telegraf bot (test/fixtures/differential-bot.ts) behaves the same
 * under tg-relay as on plain telegraf. Run A: plain telegraf, `bot.handleUpdate` one update at a
 * time, against a fresh Bot API sandbox. Run B: the same updates in a second fresh sandbox, all at
 * once, served by a tg-relay poller and two workers (REPLY_MODE=outbound, the default). Per chat the
 * relayed calls Telegram took (method, params with message ids, upload sha256s) must be identical:
 * placeholders resolve to the same message ids since the sandbox numbers messages per chat.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BotApiSandbox, TgUpdate } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { Fleet, type Role } from '../../support/soak-fleet';
import { waitFor } from '../../support/wait-for';
import {
  BOT_HANDLERS,
  differences,
  freshSandbox,
  injectUpdates,
  runPlain,
  TOKEN,
  viewByChat,
  type ChatView,
} from './differential-helpers';

const CHATS = Array.from({ length: 12 }, (_, i) => 7001 + i);

type Db = Awaited<ReturnType<typeof createMigratedDatabase>>;
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

function fleetFor(db: Db, sandbox: BotApiSandbox, extra: Record<string, string> = {}): Fleet {
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'differential-'));
  const common = {
    DATABASE_URL: db.url,
    TELEGRAM_BOT_TOKEN: TOKEN,
    TELEGRAM_API_ROOT: sandbox.url,
    SHUTDOWN_TIMEOUT: '5s',
  };
  const env = (role: Role): Record<string, string> =>
    role === 'poller'
      ? { ...common, LEASE_TTL: '2s', POLL_TIMEOUT: '1s' }
      : {
          ...common,
          BOT_HANDLERS,
          STALE_AFTER: '2s',
          WORK_POLL_INTERVAL: '100ms',
          RETRY_BASE: '100ms',
          RETRY_CAP: '1s',
          // the sandbox's flood control is off: the relay's own limits only must not slow the run down
          OUTBOUND_RATE_PER_BOT: '10000/1s',
          OUTBOUND_RATE_PER_CHAT: '10000/1s',
          OUTBOUND_RATE_PER_GROUP: '10000/1s',
          ...extra,
        };
  const fleet = new Fleet({ env, logDir });
  cleanups.push(async () => {
    await fleet.killAll();
    if (!process.env.KEEP_TEST_DATA) fs.rmSync(logDir, { recursive: true, force: true });
  });
  return fleet;
}

/** Every update settled and every outbound row delivered or failed. */
async function settled(db: Db, updates: number): Promise<void> {
  await waitFor(
    async () => {
      const { rows } = await db.pool.query(
        `select (select count(*)::int from relay.inbox where state in ('handled', 'failed')) as inbox,
                (select count(*)::int from relay.outbound where state in ('pending', 'delivering')) as open,
                (select count(*)::int from relay.outbound) as outbound`,
      );
      return rows[0].inbox === updates && rows[0].outbound > 0 && rows[0].open === 0;
    },
    { timeoutMs: 45_000, intervalMs: 250, what: 'all updates handled and their calls sent' },
  );
}

async function outboundStates(db: Db): Promise<Record<string, number>> {
  const { rows } = await db.pool.query(`select state, count(*)::int as n from relay.outbound group by state`);
  return Object.fromEntries(rows.map((r) => [r.state, r.n]));
}

async function plainRun(): Promise<{ updates: TgUpdate[]; views: Map<number, ChatView> }> {
  const sandbox = await freshSandbox();
  cleanups.push(() => sandbox.stop());
  const updates = injectUpdates(sandbox, CHATS);
  await runPlain(sandbox, updates);
  return { updates, views: viewByChat(sandbox, updates) };
}

async function relayRun(): Promise<{ db: Db; sandbox: BotApiSandbox; fleet: Fleet; updates: TgUpdate[] }> {
  const db = await createMigratedDatabase('diff');
  cleanups.push(() => db.drop());
  const sandbox = await freshSandbox();
  cleanups.push(() => sandbox.stop());
  const updates = injectUpdates(sandbox, CHATS);
  return { db, sandbox, fleet: fleetFor(db, sandbox), updates };
}

/** The one line for the lead's note: how many of the test's chats came out identical. */
function summary(label: string, diffs: Array<{ chat: number }>): void {
  const differing = new Set(diffs.map((d) => d.chat));
  const same = CHATS.filter((c) => !differing.has(c)).length;
  process.stdout.write(`${label}: ${same} of ${CHATS.length} chats identical\n`);
}

describe('differential: plain telegraf vs tg-relay (poller + 2 workers, REPLY_MODE=outbound)', () => {
  it('every chat sees the same relayed calls, in the same order, with the same message ids and files', async () => {
    const plain = await plainRun();
    // run A is the reference: it must be the whole bot, every call accepted
    for (const chat of CHATS) {
      const v = plain.views.get(chat)!;
      expect(v.refused).toEqual([]);
      expect(v.calls.map((c) => c.split(' ')[0])).toEqual([
        'setMessageReaction',
        'sendMessage',
        'sendPhoto',
        'sendPhoto',
        'sendMessage',
        'editMessageText',
        'pinChatMessage',
        'sendMessage',
        'sendMediaGroup',
        'deleteMessage',
        'editMessageText',
      ]);
      expect(v.answers).toHaveLength(1);
      expect(v.direct).toHaveLength(1);
    }

    const relay = await relayRun();
    expect(relay.updates.map((u) => u.update_id)).toEqual(plain.updates.map((u) => u.update_id));
    await Promise.all([
      relay.fleet.start('poller', 'poller'),
      relay.fleet.start('w1', 'worker'),
      relay.fleet.start('w2', 'worker'),
    ]);
    await settled(relay.db, relay.updates.length);

    const diffs = differences(plain.views, viewByChat(relay.sandbox, relay.updates));
    summary('differential', diffs);
    expect(diffs.slice(0, 2)).toEqual([]);
    // and they went through relay.outbound (not straight to the Bot API): one delivered row per relayed call
    const relayed = [...plain.views.values()].reduce((n, v) => n + v.calls.length + v.answers.length, 0);
    expect(await outboundStates(relay.db)).toEqual({ delivered: relayed });
    expect(relay.fleet.crashes()).toEqual([]);
  }, 90_000);
});
