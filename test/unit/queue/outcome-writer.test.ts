/**
 * The outcome writer retries only transient failures as a batch; any other failure is isolated item
 * by item, the unwritable item replaced by its failure (or given up), and the rest lands.
 */
import { isTransientWriteError, OutcomeWriter } from '../../../libs/queue/outcome-writer';
import { createLogger } from '../../../libs/observability/logger';
import { decideSettlement } from '../../../libs/queue/settlement';
import { Outcome } from '../../../libs/queue/outcome';

const logger = createLogger({ level: 'silent' });
const sqlError = (code: string) => Object.assign(new Error(`sqlstate ${code}`), { code });

describe('isTransientWriteError', () => {
  it.each([
    [sqlError('08006'), true],
    [sqlError('57P01'), true],
    [sqlError('40P01'), true],
    [sqlError('53300'), true],
    [Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }), true],
    [new Error('Connection terminated unexpectedly'), true],
    [sqlError('22P05'), false], // untranslatable character (NUL)
    [sqlError('22P02'), false],
    [sqlError('23505'), false],
    [sqlError('TR422'), false],
    [
      Object.assign(new Error('invalid outbound message: send_options: timeout contains a NUL'), {
        code: 'RELAY_OUTBOUND_INVALID',
      }),
      false,
    ],
    [new TypeError('Cannot read properties of undefined'), false],
    [new Error('a handler effect mentions a connection timeout'), false],
  ])('%s → %s', (err, expected) => {
    expect(isTransientWriteError(err)).toBe(expected);
  });
});

describe('OutcomeWriter', () => {
  type Item = { id: number; poison?: boolean; replacedFor?: number };

  it('a batch with poison items: the others land once, each poison item is replaced by its failure, nothing retries forever', async () => {
    const landed: Item[] = [];
    let calls = 0;
    const writer = new OutcomeWriter<Item>(
      (batch) => {
        calls++;
        if (batch.some((i) => i.poison)) return Promise.reject(sqlError('22P05'));
        landed.push(...batch);
        return Promise.resolve();
      },
      logger,
      1,
      { onUnwritable: (item) => ({ id: item.id, replacedFor: item.id }) },
    );
    const items: Item[] = Array.from({ length: 10 }, (_, i) => ({ id: i, poison: i === 3 || i === 7 }));
    await Promise.all(items.map((i) => writer.submit(i)));
    await writer.idle();
    expect(
      landed
        .filter((i) => !i.replacedFor)
        .map((i) => i.id)
        .sort((a, b) => a - b),
    ).toEqual([0, 1, 2, 4, 5, 6, 8, 9]);
    expect(
      landed
        .filter((i) => i.replacedFor !== undefined)
        .map((i) => i.id)
        .sort(),
    ).toEqual([3, 7]);
    expect(calls).toBeLessThan(20);
  });

  it('an item whose failure cannot be written either is given up, the others land', async () => {
    const landed: number[] = [];
    const writer = new OutcomeWriter<Item>(
      (batch) => {
        if (batch.some((i) => i.poison)) return Promise.reject(new TypeError('effect threw'));
        landed.push(...batch.map((i) => i.id));
        return Promise.resolve();
      },
      logger,
      1,
      { onUnwritable: (item) => ({ ...item }) }, // still poison
    );
    await Promise.all([writer.submit({ id: 1 }), writer.submit({ id: 2, poison: true }), writer.submit({ id: 3 })]);
    expect(landed.sort()).toEqual([1, 3]);
  });

  it('a transient failure retries the same batch until it lands', async () => {
    let failures = 2;
    const batches: number[][] = [];
    const writer = new OutcomeWriter<Item>(
      (batch) => {
        if (failures-- > 0)
          return Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
        batches.push(batch.map((i) => i.id));
        return Promise.resolve();
      },
      logger,
      1,
    );
    await Promise.all([writer.submit({ id: 1 }), writer.submit({ id: 2 })]);
    expect(batches).toEqual([[1, 2]]);
  });
});

describe('decideSettlement: configuration problems', () => {
  const job = { id: '1', key: 'k', jobId: null, claimId: 'c', attempt: 5, maxAttempts: 5, row: {} };
  const policy = { baseMs: 100, capMs: 10_000, maxAttempts: 5 };

  it('an uncounted retry with a backoff step is pending after a jittered backoff of that step, even on the last attempt of the budget', () => {
    const d = decideSettlement(job, Outcome.retry(undefined, { uncounted: true, backoffStep: 4 }), policy, () => 0.999);
    expect(d.settlement).toMatchObject({ state: 'pending', uncounted: true });
    expect(d.delayMs).toBe(799); // [0, min(cap, 100·2^3))
    expect(
      decideSettlement(job, Outcome.retry(undefined, { uncounted: true, backoffStep: 20 }), policy, () => 0.5).delayMs,
    ).toBe(5_000);
  });

  it('an uncounted retry without a step (a rate-limit deferral) still defaults to at once', () => {
    expect(decideSettlement(job, Outcome.retry(undefined, { uncounted: true }), policy, () => 0.5).delayMs).toBe(0);
  });
});
