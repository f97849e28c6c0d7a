/** Collector sandbox: idempotency keys, duplicates, failure modes, HTTP control. */
import { createCollector, createCollectorClient, type Collector, type CollectorReceipt } from '../../../libs/sandbox';
import { waitFor } from '../../support/wait-for';

async function capture(
  url: string,
  key: string | undefined,
  body: unknown,
  timeoutMs = 5000,
): Promise<{ status: number; headers: Headers; body: unknown } | 'dropped' | 'timeout'> {
  try {
    const res = await fetch(`${url}/capture`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(key ? { 'Idempotency-Key': key } : {}) },
      body: typeof body === 'string' ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    return { status: res.status, headers: res.headers, body: await res.json() };
  } catch (err) {
    return (err as Error).name === 'TimeoutError' ? 'timeout' : 'dropped';
  }
}

describe('sandbox collector', () => {
  let col: Collector;
  let url: string;
  const seen: CollectorReceipt[] = [];

  beforeEach(async () => {
    seen.length = 0;
    col = createCollector({ seed: 3, onReceive: (r) => seen.push(r) });
    url = await col.start();
  });
  afterEach(async () => {
    await col.stop();
  });

  it('records captures by Idempotency-Key and counts duplicates', async () => {
    expect(col.captureUrl).toBe(`${url}/capture`);
    expect(await capture(url, 'k1', { n: 1 })).toMatchObject({ status: 200, body: { ok: true, duplicate: false } });
    expect(await capture(url, 'k2', { n: 2 })).toMatchObject({ status: 200 });
    expect(await capture(url, 'k1', { n: 1 })).toMatchObject({ status: 200, body: { ok: true, duplicate: true } });
    expect(await capture(url, 'k1', { n: 1 })).toMatchObject({ status: 200 });
    expect(col.received().map((r) => [r.key, r.nth, r.duplicate])).toEqual([
      ['k1', 1, false],
      ['k2', 1, false],
      ['k1', 2, true],
      ['k1', 3, true],
    ]);
    expect(col.received()[0].body).toEqual({ n: 1 });
    expect(Math.abs(col.received()[0].received_at - Date.now())).toBeLessThan(5000);
    expect(col.duplicates()).toEqual([{ key: 'k1', count: 3 }]);
    expect([...col.byKey().keys()]).toEqual(['k1', 'k2']);
    expect(seen).toHaveLength(4);
    expect(col.stats()).toMatchObject({ received: 4, unique_keys: 2, duplicate_receipts: 2 });
  });

  it('answers 400 without an Idempotency-Key or with a non-JSON body, recording nothing', async () => {
    expect(await capture(url, undefined, { n: 1 })).toMatchObject({
      status: 400,
      body: { description: 'Idempotency-Key header is required' },
    });
    expect(await capture(url, 'k', '{oops')).toMatchObject({ status: 400 });
    expect(col.received()).toEqual([]);
    expect(col.attempts().map((a) => a.outcome)).toEqual(['missing_key', 'bad_json']);
  });

  it('fails the next N calls as scripted, then accepts', async () => {
    col.setFaults({ failNext: { count: 2, mode: 'unavailable' }, retryAfterSeconds: 7 });
    const a = await capture(url, 'k', { n: 1 });
    expect(a).toMatchObject({ status: 503 });
    expect(a !== 'dropped' && a !== 'timeout' && a.headers.get('retry-after')).toBe('7');
    expect(await capture(url, 'k', { n: 1 })).toMatchObject({ status: 503 });
    expect(await capture(url, 'k', { n: 1 })).toMatchObject({ status: 200, body: { duplicate: false } });
    expect(col.received()).toHaveLength(1);
    expect(col.attempts().map((a) => a.outcome)).toEqual(['unavailable', 'unavailable', 'accepted']);
  });

  it('answers 4xx, drops connections, and holds requests open (timeouts) without recording', async () => {
    col.setFaults({ failNext: { count: 1, mode: 'reject' }, rejectStatus: 422 });
    expect(await capture(url, 'a', {})).toMatchObject({ status: 422 });
    col.setFaults({ failNext: { count: 1, mode: 'drop' } });
    expect(await capture(url, 'b', {})).toBe('dropped');
    col.setFaults({ failNext: { count: 1, mode: 'timeout' } }); // never answers
    expect(await capture(url, 'c', {}, 300)).toBe('timeout');
    col.setFaults({ failNext: { count: 1, mode: 'timeout' }, timeoutMs: 100 });
    expect(await capture(url, 'd', {})).toMatchObject({ status: 504 });
    expect(col.received()).toEqual([]);
    expect(col.attempts().map((a) => a.outcome)).toEqual(['reject', 'drop', 'timeout', 'timeout']);
  });

  it('slow mode records the capture but answers late: an impatient client retries into a duplicate', async () => {
    col.setFaults({ failNext: { count: 1, mode: 'slow' }, slowMs: 1000 });
    expect(await capture(url, 'k', { v: 1 }, 200)).toBe('timeout');
    expect(await capture(url, 'k', { v: 1 })).toMatchObject({ status: 200, body: { duplicate: true } });
    expect(col.duplicates()).toEqual([{ key: 'k', count: 2 }]);
  });

  it('fails a seeded share of calls', async () => {
    col.setFaults({ unavailableRate: 0.5 });
    const statuses = [];
    for (let i = 0; i < 100; i++) {
      const r = await capture(url, `k${i}`, {});
      statuses.push(typeof r === 'string' ? r : r.status);
    }
    const failed = statuses.filter((s) => s === 503).length;
    expect(failed).toBeGreaterThan(30);
    expect(failed).toBeLessThan(70);
    expect(col.received()).toHaveLength(100 - failed);
  });

  it('is driven over HTTP by the control client', async () => {
    const client = createCollectorClient(url);
    expect(await client.health()).toEqual({ status: 'ok' });
    await client.setFaults({ failNext: { count: 1, mode: 'reject' } });
    expect(await capture(url, 'x', { a: 1 })).toMatchObject({ status: 422 });
    await capture(url, 'x', { a: 1 });
    await capture(url, 'x', { a: 1 });
    expect((await client.received()).map((r) => r.key)).toEqual(['x', 'x']);
    expect(await client.duplicates()).toEqual([{ key: 'x', count: 2 }]);
    expect(Object.keys(await client.keys())).toEqual(['x']);
    expect((await client.attempts()).map((a) => a.status)).toEqual([422, 200, 200]);
    expect((await client.stats()).by_outcome).toEqual({ reject: 1, accepted: 1, duplicate: 1 });
    await expect(client.setFaults({ dropRate: 3 })).rejects.toThrow(/between 0 and 1/);
    await client.reset();
    await waitFor(async () => (await client.received()).length === 0);
    expect(col.attempts()).toEqual([]);
  });
});
