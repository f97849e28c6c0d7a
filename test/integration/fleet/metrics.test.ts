/**
 * METRICS_PORT on real processes: two `tg-relay poller` (owner and standby), two `tg-relay worker`
 * and a `tg-relay jetstream` bridge, all on a real PostgreSQL reached through a TCP proxy the test
 * can cut, a real NATS, the Bot API sandbox and the sandbox collector. Scrapes /metrics (parsed
 * strictly), checks names and types, that the workers' counters add up to what the database says,
 * and /health/ready: 200 for the owner and for the standby (a standby is healthy as standby), 503
 * for everyone while the database is unreachable. Without METRICS_PORT nothing listens.
 */
import fs from 'node:fs';
import { freePort } from '../../../libs/db';
import type { BotApiSandbox } from '../../../libs/sandbox';
import { createCollector, Collector } from '../../../libs/sandbox';
import { parsePrometheus, Family } from '../admin/prom-parse';
import { exited } from '../../support/cli';
import { createMigratedDatabase } from '../../support/db';
import { newBotToken, startSandbox } from '../../support/ingress-harness';
import { killHard, PollerProcess, startPollerProcess } from '../../support/ingress-processes';
import { bridgeBound, natsScope, NatsScope, startBridge, startTcpProxy, BridgeProcess } from '../../support/jetstream';
import { waitFor } from '../../support/wait-for';
import { startWorkerProcess, workerStarted, WorkerProcess } from '../../support/worker-process';

jest.setTimeout(180_000);

const N = 60;
const CHATS = [7001, 7002, 7003];

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
let collector: Collector;
let scope: NatsScope;
let proxy: Awaited<ReturnType<typeof startTcpProxy>>;
let proxiedUrl: string;
const bot = newBotToken();

interface Proc {
  name: string;
  child: PollerProcess | WorkerProcess | BridgeProcess;
  port: number;
  workerId?: string;
}
const procs: Record<string, Proc> = {};
const others: (PollerProcess | WorkerProcess)[] = [];

const base = (p: Proc) => `http://127.0.0.1:${p.port}`;
async function scrape(p: Proc): Promise<Map<string, Family>> {
  const res = await fetch(`${base(p)}/metrics`);
  expect([p.name, res.status, res.headers.get('content-type')]).toEqual([
    p.name,
    200,
    expect.stringMatching(/^text\/plain; version=0\.0\.4/),
  ]);
  return parsePrometheus(await res.text());
}
async function ready(p: Proc): Promise<{
  status: number;
  body: { ready: boolean; reasons: string[]; checks: Record<string, Record<string, unknown>> };
}> {
  const res = await fetch(`${base(p)}/health/ready`);
  return { status: res.status, body: (await res.json()) as never };
}
const sum = (fams: Map<string, Family>, name: string, labels: Record<string, string> = {}) =>
  [...fams.values()]
    .flatMap((f) => f.samples)
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);
const typeOf = (fams: Map<string, Family>, name: string) => fams.get(name)?.type;

async function withMetrics<T extends PollerProcess | WorkerProcess | BridgeProcess>(
  name: string,
  start: (env: Record<string, string>) => T,
): Promise<Proc> {
  const port = await freePort();
  const p: Proc = { name, child: start({ METRICS_PORT: String(port), METRICS_HOST: '127.0.0.1' }), port };
  procs[name] = p;
  return p;
}

beforeAll(async () => {
  db = await createMigratedDatabase('fleet_metrics');
  const u = new URL(db.url);
  proxy = await startTcpProxy({ host: u.hostname, port: Number(u.port || 5432) });
  u.hostname = '127.0.0.1';
  u.port = String(proxy.port);
  proxiedUrl = u.toString();
  sandbox = await startSandbox();
  collector = createCollector();
  await collector.start();
  scope = await natsScope('MET');

  const poller = (env: Record<string, string>) =>
    startPollerProcess({
      databaseUrl: proxiedUrl,
      apiRoot: sandbox.url,
      token: bot.token,
      extra: { ALLOWED_CHAT_IDS: CHATS.join(','), ...env },
    });
  const worker = (env: Record<string, string>) =>
    // STALE_AFTER 10s: readiness wants heartbeats younger than 6 s, out of reach of a loaded test machine's stalls
    startWorkerProcess({
      DATABASE_URL: proxiedUrl,
      CAPTURE_URL: collector.captureUrl,
      WORKER_CONCURRENCY: '4',
      STALE_AFTER: '10s',
      ...env,
    });
  await withMetrics('owner', poller);
  await waitFor(
    async () =>
      (await db.pool.query(`select lease_owner from relay.cursor where bot_id = $1`, [bot.botId])).rows[0]?.lease_owner,
    {
      timeoutMs: 30_000,
      what: 'the first poller owns the lease',
    },
  );
  await withMetrics('standby', poller);
  await withMetrics('worker1', worker);
  await withMetrics('worker2', worker);
  await withMetrics('bridge', (env) =>
    startBridge(scope, { DATABASE_URL: proxiedUrl, TELEGRAM_BOT_TOKEN: bot.token, ...env }),
  );
  procs.worker1.workerId = await workerStarted(procs.worker1.child, 40_000);
  procs.worker2.workerId = await workerStarted(procs.worker2.child, 40_000);
  await bridgeBound(procs.bridge.child, 40_000);
  // every endpoint is listening (the standby's start is not otherwise awaited: on a loaded machine its
  // tsx start can outlast the others')
  for (const p of Object.values(procs)) {
    await waitFor(async () => (await fetch(`${base(p)}/health/live`).catch(() => null))?.ok === true, {
      timeoutMs: 40_000,
      what: `${p.name}'s metrics endpoint`,
    });
  }
});

afterAll(async () => {
  for (const p of Object.values(procs)) await killHard(p.child);
  for (const c of others) await killHard(c);
  await scope?.cleanup();
  await collector?.stop();
  await sandbox?.stop();
  await proxy?.close();
  await db?.drop();
});

test('names and types: Node defaults under their standard names, and each role its own tg_relay_ metrics', async () => {
  for (const p of Object.values(procs)) {
    const fams = await scrape(p);
    expect([p.name, typeOf(fams, 'process_cpu_seconds_total'), typeOf(fams, 'nodejs_eventloop_lag_seconds')]).toEqual([
      p.name,
      'counter',
      'gauge',
    ]);
    for (const f of fams.values()) {
      if (f.type === 'counter') expect([p.name, f.name]).toEqual([p.name, expect.stringMatching(/_total$/)]);
      if (f.name.startsWith('tg_relay_') && f.type === 'histogram')
        expect([p.name, f.name]).toEqual([p.name, expect.stringMatching(/_seconds$/)]);
    }
  }
  const owner = await scrape(procs.owner);
  for (const [name, type] of [
    ['tg_relay_get_updates_total', 'counter'],
    ['tg_relay_batch_duration_seconds', 'histogram'],
    ['tg_relay_ingress_updates_total', 'counter'],
    ['tg_relay_ingress_lease_owner', 'gauge'],
  ])
    expect([name, typeOf(owner, name)]).toEqual([name, type]);
  const worker = await scrape(procs.worker1);
  for (const [name, type] of [
    ['tg_relay_claim_duration_seconds', 'histogram'],
    ['tg_relay_attempts_total', 'counter'],
    ['tg_relay_attempt_duration_seconds', 'histogram'],
    ['tg_relay_jobs_in_flight', 'gauge'],
    ['tg_relay_heartbeat_age_seconds', 'gauge'],
    ['tg_relay_outcome_writer_backlog', 'gauge'],
    ['tg_relay_claimed_jobs_total', 'counter'],
  ])
    expect([name, typeOf(worker, name)]).toEqual([name, type]);
  expect(worker.get('tg_relay_claim_duration_seconds')!.samples.some((s) => s.labels.queue === 'capture.deliver')).toBe(
    true,
  );
  const bridge = await scrape(procs.bridge);
  expect(typeOf(bridge, 'tg_relay_jetstream_messages_total')).toBe('counter');
  expect(sum(bridge, 'tg_relay_jetstream_connected')).toBe(1);
  // each process shows what it runs, not the others' instruments
  expect(typeOf(worker, 'tg_relay_get_updates_total')).toBeUndefined();
  expect(typeOf(owner, 'tg_relay_attempts_total')).toBeUndefined();
});

test(`${N} updates through the poller and two workers: the workers' delivered counters add up to what the database says`, async () => {
  const { rows: before } = await db.pool.query(`select count(*)::int as n from relay.captures`);
  expect(before[0].n).toBe(0);
  sandbox.injectMessages(bot.token, N, { chats: CHATS });
  await waitFor(
    async () =>
      (await db.pool.query(`select count(*)::int as n from relay.captures where state = 'delivered'`)).rows[0].n ===
        N || undefined,
    {
      timeoutMs: 90_000,
      what: `${N} captures delivered`,
    },
  );
  const owner = await scrape(procs.owner);
  expect(sum(owner, 'tg_relay_ingress_updates_total', { transport: 'polling', result: 'stored' })).toBe(N);
  // a single-bot poller's series are its one bot's
  expect(sum(owner, 'tg_relay_ingress_updates_total', { result: 'stored', bot_id: bot.botId })).toBe(N);
  expect(sum(owner, 'tg_relay_get_updates_total', { result: 'updates' })).toBeGreaterThanOrEqual(1);
  expect(sum(owner, 'tg_relay_batch_duration_seconds_count', { result: 'committed' })).toBeGreaterThanOrEqual(1);
  const standby = await scrape(procs.standby);
  expect(sum(standby, 'tg_relay_ingress_updates_total')).toBe(0);
  expect(sum(standby, 'tg_relay_get_updates_total')).toBe(0);

  const delivered = (await db.pool.query(`select count(*)::int as n from relay.captures where state = 'delivered'`))
    .rows[0].n;
  // a worker counts an outcome right after its transaction commits: the database may be a moment ahead
  const counted = async () => {
    let n = 0;
    for (const w of [procs.worker1, procs.worker2])
      n += sum(await scrape(w), 'tg_relay_attempts_total', { queue: 'capture.deliver', outcome: 'delivered' });
    return n;
  };
  await waitFor(async () => (await counted()) >= delivered || undefined, {
    timeoutMs: 10_000,
    what: 'the workers counted every committed delivery',
  });
  for (const w of [procs.worker1, procs.worker2])
    await waitFor(async () => sum(await scrape(w), 'tg_relay_jobs_in_flight') === 0 || undefined, {
      timeoutMs: 10_000,
      what: `${w.name} holds no job`,
    });
  let total = 0;
  for (const w of [procs.worker1, procs.worker2]) {
    const fams = await scrape(w);
    const mine = sum(fams, 'tg_relay_attempts_total', { queue: 'capture.deliver', outcome: 'delivered' });
    // per process: exactly the delivered attempts this worker wrote to the audit trail
    const audited = (
      await db.pool.query(
        `select count(*)::int as n from relay.attempts where subject = 'capture' and outcome = 'delivered' and worker_id = $1`,
        [w.workerId],
      )
    ).rows[0].n;
    expect([w.name, mine]).toEqual([w.name, audited]);
    // a single-bot worker's attempts are its one bot's (the captures' bot)
    expect(
      sum(fams, 'tg_relay_attempts_total', { queue: 'capture.deliver', outcome: 'delivered', bot_id: bot.botId }),
    ).toBe(mine);
    expect(
      sum(fams, 'tg_relay_attempt_duration_seconds_count', { queue: 'capture.deliver', outcome: 'delivered' }),
    ).toBe(mine);
    expect(sum(fams, 'tg_relay_attempt_http_responses_total', { queue: 'capture.deliver' })).toBeGreaterThanOrEqual(
      mine,
    );
    total += mine;
  }
  expect(total).toBe(delivered);
  expect(total).toBe(N);
});

test('the bridge counts the messages it stored', async () => {
  for (let i = 0; i < 5; i++) await scope.publish({ msg_id: `met-${i}`, chat_id: 7001, text: `m ${i}` }, `met-${i}`);
  await scope.publish({ msg_id: 'met-0', chat_id: 7001, text: 'm 0' }, 'met-0-again'); // same msg_id, new NATS id: a duplicate row
  await waitFor(
    async () => (await db.pool.query(`select count(*)::int as n from relay.outbound`)).rows[0].n === 5 || undefined,
    { what: '5 outbound rows' },
  );
  await waitFor(async () => sum(await scrape(procs.bridge), 'tg_relay_jetstream_messages_total') === 6 || undefined, {
    what: 'the bridge counted 6',
  });
  const fams = await scrape(procs.bridge);
  expect(sum(fams, 'tg_relay_jetstream_messages_total', { result: 'created' })).toBe(5);
  expect(sum(fams, 'tg_relay_jetstream_messages_total', { result: 'duplicate' })).toBe(1);
});

test('ready: owner and standby both 200 (the standby is healthy as standby), workers and bridge 200; live always 200', async () => {
  for (const p of Object.values(procs)) {
    const r = await ready(p);
    expect([p.name, r.status, r.body.ready, r.body.reasons]).toEqual([p.name, 200, true, []]);
    expect((await fetch(`${base(p)}/health/live`)).status).toBe(200);
  }
  expect((await ready(procs.owner)).body.checks.poller.role).toBe('owner');
  expect((await ready(procs.standby)).body.checks.poller.role).toBe('standby');
  expect(sum(await scrape(procs.owner), 'tg_relay_ingress_lease_owner', { bot_id: bot.botId })).toBe(1);
  expect(sum(await scrape(procs.standby), 'tg_relay_ingress_lease_owner', { bot_id: bot.botId })).toBe(0);
  const w = (await ready(procs.worker1)).body.checks.worker as { loops: { queue: string; running: boolean }[] };
  expect(w.loops).toEqual([expect.objectContaining({ queue: 'capture.deliver', running: true })]);
});

test('the database unreachable: every process answers 503 naming the database, then 200 again once it is back', async () => {
  await proxy.cut();
  try {
    for (const p of Object.values(procs)) {
      const r = await waitFor(
        async () => {
          const x = await ready(p);
          return x.status === 503 ? x : undefined;
        },
        { timeoutMs: 20_000, what: `${p.name} not ready` },
      );
      expect([p.name, r.body.ready, r.body.reasons.join('\n')]).toEqual([
        p.name,
        false,
        expect.stringMatching(/database/),
      ]);
      expect((await fetch(`${base(p)}/health/live`)).status).toBe(200);
    }
  } finally {
    await proxy.restore();
  }
  for (const p of Object.values(procs)) {
    await waitFor(async () => (await ready(p)).status === 200 || undefined, {
      timeoutMs: 30_000,
      what: `${p.name} ready again`,
    });
  }
  // one of the two pollers owns ingress again, the other stands by
  const owners = [
    sum(await scrape(procs.owner), 'tg_relay_ingress_lease_owner'),
    sum(await scrape(procs.standby), 'tg_relay_ingress_lease_owner'),
  ];
  expect(owners.sort()).toEqual([0, 1]);
});

/** TCP ports a process listens on (its socket inodes matched against /proc/net/tcp{,6} LISTEN rows). */
function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of fs.readFileSync(file, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length > 9 && cols[3] === '0A' && inodes.has(cols[9])) ports.push(parseInt(cols[1].split(':')[1], 16));
    }
  }
  return ports;
}

test('METRICS_PORT unset: a worker and a poller listen on nothing; SIGTERM closes the endpoint of one that had it', async () => {
  const w = startWorkerProcess({ DATABASE_URL: db.url, CAPTURE_URL: collector.captureUrl });
  const p = startPollerProcess({ databaseUrl: db.url, apiRoot: sandbox.url, token: bot.token });
  others.push(w, p);
  await workerStarted(w, 40_000);
  await waitFor(() => p.output().includes('ingress starting') || undefined, {
    timeoutMs: 40_000,
    what: 'poller started',
  });
  expect(listeningPorts(w.pid!)).toEqual([]);
  expect(listeningPorts(p.pid!)).toEqual([]);
  // the same check sees the endpoint of a process that has one
  expect(listeningPorts(procs.worker2.child.pid!)).toEqual([procs.worker2.port]);

  procs.worker2.child.kill('SIGTERM');
  expect(await exited(procs.worker2.child)).toEqual({ code: 0, signal: null });
  await expect(fetch(`${base(procs.worker2)}/health/live`)).rejects.toThrow();
});
