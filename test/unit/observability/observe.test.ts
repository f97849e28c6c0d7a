/**
 * The instruments fed by the components' events (observeWorker, observeIngress): which samples an
 * event produces, under which names and labels. The fleet test (test/integration/fleet/metrics.test.ts)
 * checks the same names on real processes.
 */
import type { Registry } from 'prom-client';
import { createIngressEvents } from '../../../libs/ingress/events';
import { silentLogger } from '../../../libs/observability/logger';
import {
  createProcessRegistry,
  ingressMetrics,
  observeIngress,
  observeWorker,
  rateLimitMetrics,
} from '../../../libs/observability/metrics';
import { createWorkerEvents } from '../../../libs/queue/events';

type Sample = [string, Record<string, string | number>, number];

/** Every sample of the named families, as [name, labels, value], histograms by their _count and _sum. */
async function samples(registry: Registry, names: string[]): Promise<Sample[]> {
  const out: Sample[] = [];
  for (const m of await registry.getMetricsAsJSON()) {
    if (!names.includes(m.name)) continue;
    for (const v of m.values as { metricName?: string; labels: Record<string, string | number>; value: number }[]) {
      const name = v.metricName ?? m.name;
      if (name.endsWith('_bucket')) continue;
      out.push([name, v.labels, v.value]);
    }
  }
  return out;
}

const stats = { claimed: 0, delivered: 0, retried: 0, failed: 0, fenced: 0, recovered: 0, released: 0, claimErrors: 0 };

describe('observeWorker', () => {
  it('claimed and settled events feed the claim, attempt, HTTP status and 429 instruments by queue, the attempt ones by bot', async () => {
    const registry = createProcessRegistry({ defaultMetrics: false });
    const events = createWorkerEvents(silentLogger());
    const loop = { queue: 'outbound.send', inFlight: 0, heartbeatAgeMs: 0, outcomeBacklog: 0, stats };
    observeWorker(registry, { kinds: [loop], events });
    const q = 'outbound.send';
    events.emit('claimed', { queue: q, durationMs: 2, count: 3 });
    events.emit('settled', { queue: q, botId: '11', state: 'delivered', durationMs: 500, status: 200 });
    events.emit('settled', { queue: q, botId: '11', state: 'pending', durationMs: 250, status: 429 });
    events.emit('settled', { queue: q, botId: '22', state: 'failed', durationMs: 1000 });
    events.emit('settled', { queue: q, botId: '22', state: 'delivered', durationMs: 100, status: 200 });
    events.emit('unsettled', { queue: q, botId: '22', outcome: 'fenced' });
    events.emit('unsettled', { queue: q, botId: '11', outcome: 'released' });
    expect(
      await samples(registry, [
        'tg_relay_claim_duration_seconds',
        'tg_relay_attempts_total',
        'tg_relay_attempt_duration_seconds',
        'tg_relay_attempt_http_responses_total',
        'tg_relay_rate_limited_total',
      ]),
    ).toEqual([
      ['tg_relay_attempts_total', { queue: q, outcome: 'delivered', bot_id: '11' }, 1],
      ['tg_relay_attempts_total', { queue: q, outcome: 'retry', bot_id: '11' }, 1],
      ['tg_relay_attempts_total', { queue: q, outcome: 'failed', bot_id: '22' }, 1],
      ['tg_relay_attempts_total', { queue: q, outcome: 'delivered', bot_id: '22' }, 1],
      ['tg_relay_attempts_total', { queue: q, outcome: 'fenced', bot_id: '22' }, 1],
      ['tg_relay_attempts_total', { queue: q, outcome: 'released', bot_id: '11' }, 1],
      ['tg_relay_claim_duration_seconds_sum', { queue: q }, 0.002],
      ['tg_relay_claim_duration_seconds_count', { queue: q }, 1],
      ['tg_relay_attempt_duration_seconds_sum', { queue: q, outcome: 'delivered', bot_id: '11' }, 0.5],
      ['tg_relay_attempt_duration_seconds_count', { queue: q, outcome: 'delivered', bot_id: '11' }, 1],
      ['tg_relay_attempt_duration_seconds_sum', { queue: q, outcome: 'retry', bot_id: '11' }, 0.25],
      ['tg_relay_attempt_duration_seconds_count', { queue: q, outcome: 'retry', bot_id: '11' }, 1],
      ['tg_relay_attempt_duration_seconds_sum', { queue: q, outcome: 'failed', bot_id: '22' }, 1],
      ['tg_relay_attempt_duration_seconds_count', { queue: q, outcome: 'failed', bot_id: '22' }, 1],
      ['tg_relay_attempt_duration_seconds_sum', { queue: q, outcome: 'delivered', bot_id: '22' }, 0.1],
      ['tg_relay_attempt_duration_seconds_count', { queue: q, outcome: 'delivered', bot_id: '22' }, 1],
      ['tg_relay_attempt_http_responses_total', { queue: q, status: '200', bot_id: '11' }, 1],
      ['tg_relay_attempt_http_responses_total', { queue: q, status: '429', bot_id: '11' }, 1],
      ['tg_relay_attempt_http_responses_total', { queue: q, status: '200', bot_id: '22' }, 1],
      ['tg_relay_rate_limited_total', { queue: q, bot_id: '11' }, 1],
    ]);
  });

  it("the series of a bot a fleet loop no longer serves are gone at the next scrape; other queues' and a single-bot loop's stay", async () => {
    const registry = createProcessRegistry({ defaultMetrics: false });
    const events = createWorkerEvents(silentLogger());
    let served = ['11', '22'];
    const fleetLoop = {
      queue: 'outbound.send',
      inFlight: 0,
      heartbeatAgeMs: 0,
      outcomeBacklog: 0,
      stats,
      servedBots: () => served,
    };
    // a loop without servedBots serves every bot it meets (a single-bot worker's)
    const single = { queue: 'capture.deliver', inFlight: 0, heartbeatAgeMs: 0, outcomeBacklog: 0, stats };
    observeWorker(registry, { kinds: [fleetLoop, single], events });
    const waits = rateLimitMetrics(registry);
    for (const botId of ['11', '22']) {
      events.emit('settled', { queue: 'outbound.send', botId, state: 'delivered', durationMs: 10, status: 429 });
      events.emit('settled', { queue: 'capture.deliver', botId, state: 'delivered', durationMs: 10, status: 200 });
      waits.waited(botId, 250);
      waits.deferred(botId);
    }
    const families = [
      'tg_relay_attempts_total',
      'tg_relay_attempt_duration_seconds',
      'tg_relay_attempt_http_responses_total',
      'tg_relay_rate_limited_total',
      'tg_relay_rate_limit_waits_total',
      'tg_relay_rate_limit_wait_seconds_total',
      'tg_relay_rate_limit_deferred_total',
    ];
    const botsOf = async () => {
      const out: Record<string, string[]> = {};
      for (const [name, labels] of await samples(registry, families))
        (out[`${name} ${labels.queue ?? ''}`.trim()] ??= []).push(String(labels.bot_id));
      for (const k of Object.keys(out)) out[k] = [...new Set(out[k])].sort();
      return out;
    };
    const both = await botsOf();
    expect(Object.values(both).every((bots) => bots.join() === '11,22')).toBe(true);
    expect(Object.keys(both).sort()).toEqual(
      [
        'tg_relay_attempts_total capture.deliver',
        'tg_relay_attempts_total outbound.send',
        'tg_relay_attempt_duration_seconds_count capture.deliver',
        'tg_relay_attempt_duration_seconds_count outbound.send',
        'tg_relay_attempt_duration_seconds_sum capture.deliver',
        'tg_relay_attempt_duration_seconds_sum outbound.send',
        'tg_relay_attempt_http_responses_total capture.deliver',
        'tg_relay_attempt_http_responses_total outbound.send',
        'tg_relay_rate_limited_total outbound.send',
        'tg_relay_rate_limit_deferred_total',
        'tg_relay_rate_limit_wait_seconds_total',
        'tg_relay_rate_limit_waits_total',
      ].sort(),
    );
    served = ['11'];
    const after = await botsOf();
    for (const [k, bots] of Object.entries(after))
      expect([k, bots]).toEqual([k, k.endsWith('capture.deliver') ? ['11', '22'] : ['11']]);
    expect(Object.keys(after)).toEqual(Object.keys(both));
    // a bot that comes back starts its series again
    served = ['11', '22'];
    events.emit('settled', { queue: 'outbound.send', botId: '22', state: 'failed', durationMs: 10 });
    expect(
      (await samples(registry, ['tg_relay_attempts_total'])).filter(
        ([, l]) => l.bot_id === '22' && l.queue === 'outbound.send',
      ),
    ).toEqual([['tg_relay_attempts_total', { queue: 'outbound.send', outcome: 'failed', bot_id: '22' }, 1]]);
  });

  it("the loops' stats are read at scrape time", async () => {
    const registry = createProcessRegistry({ defaultMetrics: false });
    const loop = {
      queue: 'capture.deliver',
      inFlight: 2,
      heartbeatAgeMs: 1500,
      outcomeBacklog: 1,
      stats: { ...stats },
    };
    observeWorker(registry, { kinds: [loop], events: createWorkerEvents(silentLogger()) });
    loop.stats.claimed = 7;
    expect(
      await samples(registry, [
        'tg_relay_claimed_jobs_total',
        'tg_relay_jobs_in_flight',
        'tg_relay_heartbeat_age_seconds',
      ]),
    ).toEqual([
      ['tg_relay_claimed_jobs_total', { queue: 'capture.deliver' }, 7],
      ['tg_relay_jobs_in_flight', { queue: 'capture.deliver' }, 2],
      ['tg_relay_heartbeat_age_seconds', { queue: 'capture.deliver' }, 1.5],
    ]);
  });
});

describe('observeIngress', () => {
  it('getUpdates and batch events feed their counters and the batch histogram; the lease gauge is read at scrape time', async () => {
    const registry = createProcessRegistry({ defaultMetrics: false });
    const events = createIngressEvents(silentLogger());
    let owner = false;
    observeIngress(registry, '123', { events, holdsLease: () => owner });
    events.emit('getUpdates', { result: 'updates' });
    events.emit('getUpdates', { result: 'conflict' });
    events.emit('batch', {
      transport: 'polling',
      result: 'committed',
      durationMs: 10,
      stored: 5,
      duplicates: 2,
      quarantined: 0,
      captureConflicts: 1,
    });
    events.emit('batch', { transport: 'webhook', result: 'fenced', durationMs: 4 });
    owner = true;
    expect(
      await samples(registry, [
        'tg_relay_get_updates_total',
        'tg_relay_ingress_updates_total',
        'tg_relay_batch_duration_seconds',
        'tg_relay_ingress_lease_owner',
      ]),
    ).toEqual([
      ['tg_relay_ingress_lease_owner', { bot_id: '123' }, 1],
      ['tg_relay_batch_duration_seconds_sum', { transport: 'polling', result: 'committed', bot_id: '123' }, 0.01],
      ['tg_relay_batch_duration_seconds_count', { transport: 'polling', result: 'committed', bot_id: '123' }, 1],
      ['tg_relay_batch_duration_seconds_sum', { transport: 'webhook', result: 'fenced', bot_id: '123' }, 0.004],
      ['tg_relay_batch_duration_seconds_count', { transport: 'webhook', result: 'fenced', bot_id: '123' }, 1],
      ['tg_relay_ingress_updates_total', { transport: 'polling', result: 'stored', bot_id: '123' }, 5],
      ['tg_relay_ingress_updates_total', { transport: 'polling', result: 'duplicate', bot_id: '123' }, 2],
      ['tg_relay_ingress_updates_total', { transport: 'polling', result: 'capture_conflict', bot_id: '123' }, 1],
      ['tg_relay_get_updates_total', { result: 'updates', bot_id: '123' }, 1],
      ['tg_relay_get_updates_total', { result: 'conflict', bot_id: '123' }, 1],
    ]);
  });

  it("each bot's ingress counts under its own bot_id; untrack removes every series of that bot and only its", async () => {
    const registry = createProcessRegistry({ defaultMetrics: false });
    const names = [
      'tg_relay_get_updates_total',
      'tg_relay_ingress_updates_total',
      'tg_relay_batch_duration_seconds',
      'tg_relay_ingress_lease_owner',
    ];
    for (const botId of ['1', '2']) {
      const events = createIngressEvents(silentLogger());
      observeIngress(registry, botId, { events, holdsLease: () => true });
      events.emit('getUpdates', { result: 'updates' });
      const stored = Number(botId) * 10;
      events.emit('batch', {
        transport: 'polling',
        result: 'committed',
        durationMs: 1,
        stored,
        duplicates: 0,
        quarantined: 0,
        captureConflicts: 0,
      });
    }
    const stored = async () =>
      (await samples(registry, ['tg_relay_ingress_updates_total'])).map(([, l, v]) => [l.bot_id, v]);
    expect(await stored()).toEqual([
      ['1', 10],
      ['2', 20],
    ]);
    ingressMetrics(registry).untrack('1');
    const left = await samples(registry, names);
    expect(left.length).toBe(5); // getUpdates, updates, the histogram's sum and count, the lease gauge
    expect(left.every(([, l]) => l.bot_id === '2')).toBe(true);
    expect(await stored()).toEqual([['2', 20]]);
  });
});
