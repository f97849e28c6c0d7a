import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { every, jitteredMs, sleep } from '../../../libs/lifecycle/timers';
import { waitFor } from '../../support/wait-for';

/** A tick that stays busy until released, counting how many ran and how many ran at once. */
function gatedTick() {
  const s = { started: 0, active: 0, maxActive: 0, release: () => undefined as void, current: Promise.resolve() };
  const tick = () => {
    s.started++;
    s.active++;
    s.maxActive = Math.max(s.maxActive, s.active);
    s.current = new Promise<void>((resolve) => (s.release = resolve)).finally(() => void s.active--);
    return s.current;
  };
  return { s, tick };
}

const noErrors = (err: unknown) => {
  throw err;
};

describe('every', () => {
  it('ticks until its signal aborts, then never again', async () => {
    const ctl = new AbortController();
    let ticks = 0;
    const t = every(5, () => void ticks++, { signal: ctl.signal, onError: noErrors });
    await waitFor(() => ticks >= 3, { what: 'three ticks' });
    ctl.abort();
    await t.done;
    const atStop = ticks;
    await sleep(50);
    expect(ticks).toBe(atStop);
  });

  it('skips the ticks that come due while the previous one runs, and does not queue them', async () => {
    const { s, tick } = gatedTick();
    const t = every(5, tick, { immediate: true, onError: noErrors });
    expect(s.started).toBe(1); // immediate: the first tick ran at once
    await sleep(60); // about a dozen periods pass while the first tick is busy
    expect(s.started).toBe(1);
    const first = s.current;
    s.release();
    await first;
    await Promise.resolve();
    // a queued tick would have started as soon as the first one ended, before any timer fired
    expect(s.started).toBe(1);
    await waitFor(() => s.started >= 2, { what: 'the next tick' });
    s.release();
    await t.stop();
    expect(s.maxActive).toBe(1);
  });

  it('stop() waits for the tick under way, and a stop before the first tick runs none', async () => {
    const { s, tick } = gatedTick();
    const t = every(5, tick, { immediate: true, onError: noErrors });
    let stopped = false;
    const stopping = t.stop().then(() => (stopped = true));
    await sleep(20);
    expect(stopped).toBe(false);
    s.release();
    await stopping;
    expect(s.active).toBe(0);

    let ticks = 0;
    const early = every(5, () => void ticks++, { onError: noErrors });
    await early.stop();
    await sleep(30);
    expect(ticks).toBe(0);

    const ctl = new AbortController();
    ctl.abort();
    const aborted = every(5, () => void ticks++, { signal: ctl.signal, immediate: true, onError: noErrors });
    await aborted.done;
    expect(ticks).toBe(0);
  });

  it('hands thrown and rejected ticks to onError and keeps ticking', async () => {
    const errors: string[] = [];
    let n = 0;
    const t = every(
      5,
      () => {
        n++;
        if (n === 1) throw new Error('sync');
        if (n === 2) return Promise.reject(new Error('async'));
        return undefined;
      },
      {
        immediate: true,
        onError: (err) => {
          errors.push(err instanceof Error ? err.message : String(err));
          throw new Error('a throwing handler'); // must not end the ticking
        },
      },
    );
    await waitFor(() => n >= 4, { what: 'ticks after the failures' });
    await t.stop();
    expect(errors).toEqual(['sync', 'async']);
  });

  it("from 'end' starts the next wait when a tick ends", async () => {
    const { s, tick } = gatedTick();
    const t = every(40, tick, { from: 'end', immediate: true, onError: noErrors });
    await sleep(100);
    expect(s.started).toBe(1);
    const releasedAt = performance.now();
    s.release();
    await waitFor(() => s.started >= 2, { intervalMs: 1, what: 'the second tick' });
    // a whole period after the release (a timer may fire a millisecond early), not at once
    expect(performance.now() - releasedAt).toBeGreaterThanOrEqual(35);
    s.release();
    await t.stop();
  });

  it('refuses a period or jitter out of range', () => {
    for (const ms of [0, -1, Number.NaN, 2 ** 31])
      expect(() => every(ms, () => 0, { onError: noErrors })).toThrow(RangeError);
    for (const jitter of [-0.1, 1, Number.NaN])
      expect(() => every(10, () => 0, { jitter, onError: noErrors })).toThrow(RangeError);
  });
});

describe('jitteredMs', () => {
  it('stays within ms × (1 ± jitter), at least 1 ms', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (ms, jitter, r) => {
          const d = jitteredMs(ms, jitter, () => r);
          expect(Number.isInteger(d)).toBe(true);
          expect(d).toBeGreaterThanOrEqual(Math.max(1, Math.floor(ms * (1 - jitter))));
          expect(d).toBeLessThanOrEqual(Math.min(2 ** 31 - 1, Math.ceil(ms * (1 + jitter))));
        },
      ),
    );
    expect(jitteredMs(1_000, 0, () => 0.7)).toBe(1_000);
    expect([0, 1].map((r) => jitteredMs(1_000, 0.1, () => r))).toEqual([900, 1_100]);
  });
});

describe('the periodic timer of the relay', () => {
  it('is every(): no setInterval in libs/ or apps/ (the dashboard bundle aside)', () => {
    const root = path.resolve(__dirname, '../../..');
    const found: string[] = [];
    const walk = (dir: string) => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) {
          if (e.name !== 'node_modules' && p !== path.join(root, 'libs', 'admin', 'ui')) walk(p);
        } else if (/\.tsx?$/.test(e.name)) {
          fs.readFileSync(p, 'utf8')
            .split('\n')
            .forEach((line, i) => {
              if (/\bsetInterval\s*\(/.test(line)) found.push(`${path.relative(root, p)}:${i + 1}`);
            });
        }
      }
    };
    walk(path.join(root, 'libs'));
    walk(path.join(root, 'apps'));
    expect(found).toEqual([]);
  });
});
