/**
 * The instruments fed by the components' events (observeWorker, observeIngress): which samples an
 * event produces, under which names and labels. The fleet test (test/integration/fleet/metrics.test.ts)
 * checks the same names on real processes.
 */
import type { Registry } from 'prom-client';
import { createIngressEvents } from '../../../libs/ingress/events';
import { silentLogger } from '../../../libs/observability/logger';
import { createProcessRegistry, observeIngress, observeWorker } from '../../../libs/observability/metrics';
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
  it('claimed and settled events feed the claim, attempt, HTTP status and 429 instruments by queue', async () => {
    const registry = createProcessRegistry({ defaultMetrics: false });
    const events = createWorkerEvents(silentLogger());
    const loop = { queue: 'outbound.send', inFlight: 0, heartbeatAgeMs: 0, outcomeBacklog: 0, stats };
    observeWorker(registry, { kinds: [loop], events });
    events.emit('claimed', { queue: 'outbound.send', durationMs: 2, count: 3 });
    events.emit('settled', { queue: 'outbound.send', state: 'delivered', durationMs: 500, status: 200 });
    events.emit('settled', { queue: 'outbound.send', state: 'pending', durationMs: 250, status: 429 });
    events.emit('settled', { queue: 'outbound.send', state: 'failed', durationMs: 1000 });
    expect(
      await samples(registry, [
        'tg_relay_claim_duration_seconds',
        'tg_relay_attempt_duration_seconds',
        'tg_relay_attempt_http_responses_total',
        'tg_relay_rate_limited_total',
      ]),
    ).toEqual([
      ['tg_relay_claim_duration_seconds_sum', { queue: 'outbound.send' }, 0.002],
      ['tg_relay_claim_duration_seconds_count', { queue: 'outbound.send' }, 1],
      ['tg_relay_attempt_duration_seconds_sum', { queue: 'outbound.send', outcome: 'delivered' }, 0.5],
      ['tg_relay_attempt_duration_seconds_count', { queue: 'outbound.send', outcome: 'delivered' }, 1],
      ['tg_relay_attempt_duration_seconds_sum', { queue: 'outbound.send', outcome: 'retry' }, 0.25],
      ['tg_relay_attempt_duration_seconds_count', { queue: 'outbound.send', outcome: 'retry' }, 1],
      ['tg_relay_attempt_duration_seconds_sum', { queue: 'outbound.send', outcome: 'failed' }, 1],
      ['tg_relay_attempt_duration_seconds_count', { queue: 'outbound.send', outcome: 'failed' }, 1],
      ['tg_relay_attempt_http_responses_total', { queue: 'outbound.send', status: '200' }, 1],
      ['tg_relay_attempt_http_responses_total', { queue: 'outbound.send', status: '429' }, 1],
      ['tg_relay_rate_limited_total', { queue: 'outbound.send' }, 1],
    ]);
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
      ['tg_relay_batch_duration_seconds_sum', { transport: 'polling', result: 'committed' }, 0.01],
      ['tg_relay_batch_duration_seconds_count', { transport: 'polling', result: 'committed' }, 1],
      ['tg_relay_batch_duration_seconds_sum', { transport: 'webhook', result: 'fenced' }, 0.004],
      ['tg_relay_batch_duration_seconds_count', { transport: 'webhook', result: 'fenced' }, 1],
      ['tg_relay_ingress_updates_total', { transport: 'polling', result: 'stored' }, 5],
      ['tg_relay_ingress_updates_total', { transport: 'polling', result: 'duplicate' }, 2],
      ['tg_relay_ingress_updates_total', { transport: 'polling', result: 'capture_conflict' }, 1],
      ['tg_relay_get_updates_total', { result: 'updates' }, 1],
      ['tg_relay_get_updates_total', { result: 'conflict' }, 1],
    ]);
  });
});
