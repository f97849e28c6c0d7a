/**
 * INGRESS=webhook on a real `tg-relay poller` process whose public URL Telegram (the sandbox) cannot
 * reach: a front (a TCP relay standing in for the reverse proxy / firewall in front of the replica)
 * that either resets every connection or forwards it to the webhook port. While Telegram reports
 * recent delivery errors and a backlog that does not drain, /health/ready is red with the reason,
 * the problem is logged once and alerted once to the operators' chat; when deliveries succeed again
 * it is green, the backlog is stored and the problem is cleared.
 */
import net from 'node:net';
import { freePort } from '../../../libs/db';
import type { BotApiSandbox } from '../../../libs/sandbox';
import { exited } from '../../support/cli';
import { createMigratedDatabase } from '../../support/db';
import { inboxCount, inboxUpdateIds, newBotToken, range, startSandbox } from '../../support/ingress-harness';
import { killHard, logLines, PollerProcess, startPollerProcess } from '../../support/ingress-processes';
import { waitFor } from '../../support/wait-for';

jest.setTimeout(180_000);

const OPS_CHAT = '-100777000111';
let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
const procs: PollerProcess[] = [];
const fronts: net.Server[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('ingress_webhook_delivery');
  sandbox = await startSandbox({ webhookRetry: { baseMs: 50, capMs: 300, timeoutMs: 5000 } });
});
afterEach(async () => {
  for (const p of procs.splice(0)) await killHard(p);
  for (const f of fronts.splice(0)) await new Promise((r) => f.close(r));
});
afterAll(async () => {
  await sandbox.stop();
  await db.drop();
});

/** A TCP front for `targetPort`: `up` forwards, otherwise every connection is reset at once. */
async function startFront(targetPort: number): Promise<{ port: number; setUp(up: boolean): void }> {
  let up = true;
  const open = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    if (!up) {
      socket.resetAndDestroy();
      return;
    }
    // Telegram keeps connections alive: going down must cut the open ones too.
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    const upstream = net.connect(targetPort, '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  const port = await freePort();
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  fronts.push(server);
  return {
    port,
    setUp(v) {
      up = v;
      if (!v) for (const s of open) s.resetAndDestroy();
    },
  };
}

async function readyOf(metricsPort: number): Promise<{ status: number; reasons: string[] }> {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/health/ready`);
  const body = (await res.json()) as { reasons?: string[] };
  return { status: res.status, reasons: body.reasons ?? [] };
}

async function alertsOf(botId: string): Promise<{ chat_id: string; text: string }[]> {
  const { rows } = await db.pool.query(
    `select chat_id, text from relay.outbound where kind = 'alert' and bot_id = $1 order by id`,
    [botId],
  );
  return rows;
}

async function problemOf(botId: string): Promise<{ occurrences: number; reason: string } | null> {
  const { rows } = await db.pool.query(
    `select occurrences::int as occurrences, reason from relay.config_problems where component = 'webhook' and bot_id = $1`,
    [botId],
  );
  return rows[0] ?? null;
}

describe('webhook delivery health', () => {
  it('Telegram cannot reach the webhook: /health/ready red with the reason, one log line and one alert per episode; green again once deliveries succeed', async () => {
    const { token, botId } = newBotToken();
    const webhookPort = await freePort();
    const metricsPort = await freePort();
    const front = await startFront(webhookPort);
    const p = startPollerProcess({
      databaseUrl: db.url,
      apiRoot: sandbox.url,
      token,
      extra: {
        INGRESS: 'webhook',
        WEBHOOK_PORT: String(webhookPort),
        WEBHOOK_HOST: '127.0.0.1',
        WEBHOOK_PUBLIC_URL: `http://127.0.0.1:${front.port}`,
        WEBHOOK_SECRET: 'delivery-Secret_42_webhook',
        METRICS_PORT: String(metricsPort),
        METRICS_HOST: '127.0.0.1',
        OPS_CHAT_ID: OPS_CHAT,
      },
    });
    procs.push(p);
    const url = `http://127.0.0.1:${front.port}/telegram/webhook/${botId}`;
    await waitFor(() => sandbox.webhookInfo(token).url === url, { what: 'webhook registered', timeoutMs: 30_000 });
    const first = sandbox.injectMessages(token, 5, { chats: 2, chatBase: Number(botId) });
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 5, {
      what: 'first deliveries',
      timeoutMs: 30_000,
    });
    await waitFor(async () => (await readyOf(metricsPort)).status === 200, { what: 'ready', timeoutMs: 30_000 });

    // The front goes away: Telegram's deliveries fail, its backlog stays.
    front.setUp(false);
    const second = sandbox.injectMessages(token, 6, { chats: 3, chatBase: Number(botId) });
    const red = await waitFor(
      async () => {
        const r = await readyOf(metricsPort);
        return r.status === 503 ? r : null;
      },
      { what: '/health/ready red', timeoutMs: 60_000, intervalMs: 200 },
    ).catch((e) => {
      console.log(JSON.stringify(sandbox.webhookInfo(token)), p.output().slice(-4000));
      throw e;
    });
    expect(red.reasons.join('\n')).toMatch(/Telegram cannot deliver to the webhook: 6 updates pending/);
    expect(red.reasons.join('\n')).toMatch(/Connection reset by peer/);
    expect(sandbox.webhookInfo(token).pending_update_count).toBe(6);

    // Several more checks of the same episode: still one log line and one alert.
    await waitFor(async () => ((await problemOf(botId))?.occurrences ?? 0) >= 4, {
      what: 'the episode to last several checks',
      timeoutMs: 60_000,
      intervalMs: 200,
    });
    const failing = logLines(p).filter((l) => /^Telegram cannot deliver to the webhook/.test(l.msg ?? ''));
    expect(failing).toHaveLength(1);
    expect(failing[0].level).toBe(50);
    const alerts = await alertsOf(botId);
    expect(alerts).toHaveLength(1);
    expect(alerts[0].chat_id).toBe(OPS_CHAT);
    expect(alerts[0].text).toMatch(/webhook/);
    expect(await inboxCount(db.pool, botId)).toBe(5);

    // The front is back: Telegram delivers the backlog, readiness turns green, the problem is cleared.
    front.setUp(true);
    await waitFor(
      async () => (await inboxCount(db.pool, botId)) === 11 && sandbox.webhookInfo(token).pending_update_count === 0,
      { what: 'the backlog delivered', timeoutMs: 60_000 },
    );
    await waitFor(async () => (await readyOf(metricsPort)).status === 200, { what: 'green again', timeoutMs: 60_000 });
    await waitFor(async () => (await problemOf(botId)) === null, { what: 'problem cleared', timeoutMs: 30_000 });
    expect(await inboxUpdateIds(db.pool, botId)).toEqual([
      ...range(first.first_update_id!, 5),
      ...range(second.first_update_id!, 6),
    ]);
    expect(logLines(p).filter((l) => l.msg === 'Telegram delivers to the webhook again')).toHaveLength(1);
    expect(await alertsOf(botId)).toHaveLength(1);
    p.kill('SIGTERM');
    expect(await exited(p)).toEqual({ code: 0, signal: null });
  });
});
