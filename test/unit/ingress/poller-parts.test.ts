/**
 * The poller's parts on their own: what each getUpdates failure means to the loop, and the
 * watchdog's window (a stall only while updates wait; a late tick is a suspended process).
 */
import pino from 'pino';
import { describePollFailure } from '../../../libs/ingress/get-updates';
import { Watchdog } from '../../../libs/ingress/watchdog';
import { TelegramApiError, TelegramNetworkError } from '../../../libs/telegram';

const api = (errorCode: number, extra: { retryAfterHeader?: number } = {}) =>
  new TelegramApiError('getUpdates', { errorCode, description: `d${errorCode}`, ...extra });

describe('describePollFailure', () => {
  it('401/403/404 are configuration, shown in readiness', () => {
    expect(describePollFailure(api(401))).toMatchObject({
      episode: 'telegram-config',
      level: 'error',
      pollError: { kind: 'configuration', text: expect.stringContaining('check TELEGRAM_BOT_TOKEN;') },
    });
    expect(describePollFailure(api(404)).message).toMatch(/getUpdates answered 404 \(d404\).*TELEGRAM_API_ROOT/);
  });

  it('409 re-checks the lease, 429 waits retry_after (at least a second), 5xx warns, 4xx errs', () => {
    expect(describePollFailure(api(409))).toMatchObject({ episode: 'conflict', recheckLease: true });
    expect(describePollFailure(api(409)).pollError).toBeUndefined();
    expect(describePollFailure(api(429, { retryAfterHeader: 3 }))).toMatchObject({
      episode: 'rate-limit',
      waitMs: 3000,
    });
    expect(describePollFailure(api(429))).toMatchObject({ waitMs: 1000 });
    expect(describePollFailure(api(502))).toMatchObject({ episode: 'telegram', level: 'warn' });
    expect(describePollFailure(api(400))).toMatchObject({ episode: 'telegram', level: 'error' });
  });

  it('anything thrown that is no API error is a transport failure, named by its reason', () => {
    const f = describePollFailure(new TelegramNetworkError('getUpdates', 'timeout', 'no answer within 5 ms', true));
    expect(f).toMatchObject({ episode: 'telegram', level: 'warn' });
    expect(f.pollError?.text).toMatch(/^getUpdates failed \(timeout: Telegram getUpdates: no answer within 5 ms\)/);
    expect(describePollFailure('boom').pollError?.text).toMatch(/\(error: boom\)/);
  });
});

describe('Watchdog', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  function watchdog(watching = true) {
    let t = 0;
    const stalls: string[] = [];
    const w = new Watchdog({
      watchdogMs: 1_000,
      now: () => t,
      logger: pino({ level: 'silent' }),
      watching: () => watching,
      where: () => ({ generation: 7, offset: 42 }),
      onStall: (m) => stalls.push(m),
    });
    const advance = (ms: number) => {
      for (let i = 0; i < ms / 250; i++) {
        t += 250;
        jest.advanceTimersByTime(250);
      }
    };
    return { w, stalls, advance, jump: (ms: number) => (t += ms) };
  }

  it('trips once updates wait and no progress came for watchdogMs', () => {
    const { w, stalls, advance } = watchdog();
    w.start();
    advance(2_000);
    expect(stalls).toEqual([]); // nothing waits: idle is healthy
    w.progressed();
    w.updatesWaiting();
    advance(750);
    w.settledWithError(); // a failed batch that came back restarts the window
    advance(750);
    expect(stalls).toEqual([]);
    advance(500);
    expect(stalls).toHaveLength(1);
    expect(stalls[0]).toMatch(/generation 7 made no progress for 1000 ms .*2 × POLL_TIMEOUT/);
    advance(2_000);
    expect(stalls).toHaveLength(1); // stopped itself
  });

  it('progress clears the waiting updates; a late tick (suspended process) gives a new window', () => {
    const { w, stalls, advance, jump } = watchdog();
    w.start();
    w.updatesWaiting();
    advance(750);
    w.progressed();
    advance(2_000);
    expect(stalls).toEqual([]);
    w.updatesWaiting();
    jump(10_000); // the clock moved while no tick ran
    advance(750);
    expect(stalls).toEqual([]);
    w.stop();
  });

  it('does not trip while the poller is not polling', () => {
    const { w, stalls, advance } = watchdog(false);
    w.start();
    w.updatesWaiting();
    advance(3_000);
    expect(stalls).toEqual([]);
    w.stop();
  });
});
