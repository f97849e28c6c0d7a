/**
 * DECODE_POLICY=quarantine when the quarantine write itself fails: the batch is not committed and
 * Telegram is not told to forget it (the sandbox's confirmed offset stays before it); once the
 * fault is gone the same batch is stored, the bad update in relay.quarantine, nothing lost.
 */
import { createMigratedDatabase } from '../../support/db';
import { inboxUpdateIds, newBotToken, startSandbox, startTestPoller, TestPoller } from '../../support/ingress-harness';
import type { BotApiSandbox } from '../../../libs/sandbox';
import { waitFor } from '../../support/wait-for';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
let poller: TestPoller | null = null;

beforeAll(async () => {
  db = await createMigratedDatabase('ingress_quarantine_fault');
  sandbox = await startSandbox();
  await db.pool.query(`
    create function public.fail_quarantine() returns trigger language plpgsql as $$
    begin raise exception 'injected quarantine failure'; end $$;
    create trigger fail_quarantine before insert on relay.quarantine for each row execute function public.fail_quarantine();`);
});
afterAll(async () => {
  await poller?.stop();
  await sandbox.stop();
  await db.drop();
});

it('a failing quarantine write leaves the batch unconfirmed; after the fault it is stored with nothing lost', async () => {
  const { token, botId } = newBotToken();
  const chat = Number(botId);
  const a = sandbox.injectMessage(token, { chatId: chat, text: 'before' });
  const bad = sandbox.injectRawUpdate(token, `{"update_id":${a.update_id + 1},"message":{"chat":"x"}}`);
  const c = sandbox.injectMessage(token, { chatId: chat, text: 'after' });
  poller = startTestPoller({
    pool: db.pool,
    url: db.url,
    apiRoot: sandbox.url,
    token,
    botId,
    decodePolicy: 'quarantine',
  });
  await waitFor(() => poller!.logs.lines().some((l) => /batch transaction failed/.test(l.msg ?? '')), {
    what: 'the failing batch transaction',
    timeoutMs: 30_000,
  });
  // a few more attempts of the same batch
  await new Promise((r) => setTimeout(r, 1500));
  expect(await inboxUpdateIds(db.pool, botId)).toEqual([]);
  expect(sandbox.confirmedOffset(token) ?? 0).toBeLessThanOrEqual(a.update_id);
  expect(sandbox.webhookInfo(token).pending_update_count).toBe(3);

  await db.pool.query('drop trigger fail_quarantine on relay.quarantine');
  await waitFor(async () => (await inboxUpdateIds(db.pool, botId)).length === 2, { what: 'stored', timeoutMs: 30_000 });
  expect(await inboxUpdateIds(db.pool, botId)).toEqual([a.update_id, c.update_id]);
  const q = await db.pool.query('select update_id from relay.quarantine where bot_id = $1', [botId]);
  expect(q.rows.map((r) => Number(r.update_id))).toEqual([bad.slot]);
});
