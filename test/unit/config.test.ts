import { ConfigError, describeConfig, durationVar, loadConfig, parseDuration, TIMER_MAX_MS } from '../../libs/config';
import { staleTiming } from '../../libs/queue/claim-loop';

describe('parseDuration', () => {
  it.each([
    ['250ms', 250],
    ['5s', 5000],
    ['2m', 120000],
    ['1h', 3600000],
    ['1500', 1500],
    ['1.5s', 1500],
  ])('reads %s as %d ms', (input, ms) => {
    expect(parseDuration(input)).toBe(ms);
  });

  it.each(['', 'abc', '5 days', '-1s', '5x'])('rejects %p', (input) => {
    expect(parseDuration(input)).toBeUndefined();
  });
});

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const c = loadConfig({});
    expect(c.TELEGRAM_API_ROOT).toBe('https://api.telegram.org');
    expect(c.ADMIN_PORT).toBe(8080);
    expect(c.ADMIN_HOST).toBe('127.0.0.1');
    expect(c.DATA_DIR).toBe('.data');
    expect(c.ALLOWED_CHAT_IDS).toEqual([]);
    expect(c.LEASE_TTL).toBe(10000);
    expect(c.POLL_TIMEOUT).toBe(25000);
    expect(c.DECODE_POLICY).toBe('stop');
    expect(c.STALE_AFTER).toBe(30000);
    expect(c.ALERT_COALESCE).toBe(60000);
  });

  it('parses lists and durations', () => {
    const c = loadConfig({ ALLOWED_CHAT_IDS: '1, -100200, 3', LEASE_TTL: '2s', POLL_TIMEOUT: '1.5s' });
    expect(c.ALLOWED_CHAT_IDS).toEqual(['1', '-100200', '3']);
    expect(c.LEASE_TTL).toBe(2000);
    expect(c.POLL_TIMEOUT).toBe(1500);
  });

  it('treats empty strings as unset', () => {
    expect(loadConfig({ ADMIN_PORT: '', TELEGRAM_BOT_TOKEN: '' }).ADMIN_PORT).toBe(8080);
  });

  it.each([
    ['ADMIN_PORT', 'eighty', /ADMIN_PORT: expected a TCP port/],
    ['LEASE_TTL', 'ten seconds', /LEASE_TTL: expected the poller lease period as a duration/],
    ['TELEGRAM_BOT_TOKEN', 'nope', /TELEGRAM_BOT_TOKEN: expected a bot token/],
    ['ALLOWED_CHAT_IDS', '1,abc', /ALLOWED_CHAT_IDS: expected a comma-separated list of integer chat ids, got "abc"/],
    ['DATABASE_URL', 'not a url', /DATABASE_URL: expected a PostgreSQL connection URL/],
    ['LOG_LEVEL', 'loud', /LOG_LEVEL:/],
    ['OPS_CHAT_ID', 'x y', /OPS_CHAT_ID: expected an integer chat id or @channelusername/],
    [
      'OUTBOUND_MAX_UPLOAD',
      '0',
      /OUTBOUND_MAX_UPLOAD: expected the bytes one relayed Bot API call may upload: an integer from 1 to 52428800, got "0"/,
    ],
    ['OUTBOUND_MAX_UPLOAD', '52428801', /OUTBOUND_MAX_UPLOAD: .*from 1 to 52428800, got "52428801"/],
    ['OUTBOUND_MAX_UPLOAD', '20MB', /OUTBOUND_MAX_UPLOAD: .*an integer from 1 to 52428800, got "20MB"/],
  ])('a bad %s stops with a message naming it', (variable, value, message) => {
    let caught: unknown;
    try {
      loadConfig({ [variable]: value });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as Error).message).toMatch(message);
    expect((caught as ConfigError).problems.map((p) => p.variable)).toEqual([variable]);
  });

  it('OUTBOUND_MAX_UPLOAD: 20 MB by default, 1 byte to 50 MB', () => {
    expect(loadConfig({}).OUTBOUND_MAX_UPLOAD).toBe(20_971_520);
    expect(loadConfig({ OUTBOUND_MAX_UPLOAD: '1' }).OUTBOUND_MAX_UPLOAD).toBe(1);
    expect(loadConfig({ OUTBOUND_MAX_UPLOAD: '52428800' }).OUTBOUND_MAX_UPLOAD).toBe(52_428_800);
  });

  it('reports every bad variable at once', () => {
    expect(() => loadConfig({ ADMIN_PORT: 'x', LEASE_TTL: 'y' })).toThrow(/ADMIN_PORT[\s\S]*LEASE_TTL/);
  });

  it('masks secrets when describing the effective configuration', () => {
    const lines = describeConfig(
      loadConfig({
        TELEGRAM_BOT_TOKEN: '123456:AAHsecretsecretsecretsecret',
        ADMIN_TOKEN: 'admin-token-0123456789',
        DATABASE_URL: 'postgres://u:pw@h:5432/d',
      }),
    ).join('\n');
    expect(lines).not.toContain('AAHsecret');
    expect(lines).not.toContain('admin-token-0123456789');
    expect(lines).not.toContain(':pw@');
    expect(lines).toContain('TELEGRAM_BOT_TOKEN=123456:****');
  });
});

/** The problems loadConfig reports for `env`, as `VARIABLE: problem` lines (empty when valid). */
function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems.map((p) => `${p.variable}: ${p.problem}`);
  }
}

// settings that can only hurt are refused, naming the variable and the range.
describe('values that can only hurt are refused, with the variable and the allowed range', () => {
  it.each([
    // every live claim stale at once (duplicate sends), or too little margin over the heartbeat
    ['STALE_AFTER', '0', /^STALE_AFTER: .*from 2s to 2147483647ms .*got "0"/],
    ['STALE_AFTER', '1s', /^STALE_AFTER: .*from 2s to /],
    // pollers trading the lease on every hiccup
    ['LEASE_TTL', '100ms', /^LEASE_TTL: .*from 1s to /],
    ['LEASE_TTL', '999ms', /^LEASE_TTL: .*from 1s to /],
    // getUpdates busy loop, or beyond Telegram's 50 s maximum
    ['POLL_TIMEOUT', '500ms', /^POLL_TIMEOUT: .*from 1s to 50s, got "500ms"/],
    ['POLL_TIMEOUT', '0', /^POLL_TIMEOUT: .*from 1s to 50s/],
    ['POLL_TIMEOUT', '60s', /^POLL_TIMEOUT: .*from 1s to 50s, got "60s"/],
    // beyond what a timer holds (setTimeout would fire after 1 ms)
    ['STALE_AFTER', '25d', /^STALE_AFTER: .*duration/],
    ['STALE_AFTER', '600h', /^STALE_AFTER: .*to 2147483647ms \(the timer maximum/],
    ['SHUTDOWN_TIMEOUT', '2147483648', /^SHUTDOWN_TIMEOUT: .*to 2147483647ms/],
    ['RETRY_CAP', '9999999999999h', /^RETRY_CAP: /],
    ['HANDLER_TIMEOUT', '0', /^HANDLER_TIMEOUT: .*from 1s /],
    ['CAPTURE_TIMEOUT', '10ms', /^CAPTURE_TIMEOUT: .*from 1s /],
    ['OUTBOUND_SEND_TIMEOUT', '999ms', /^OUTBOUND_SEND_TIMEOUT: .*from 1s /],
    ['RETRY_BASE', '0', /^RETRY_BASE: .*from 10ms /],
    // 0 would retry a rate-limited message, or redeliver a NATS message, at once and forever
    ['OUTBOUND_MAX_RETRY_AFTER', '0', /^OUTBOUND_MAX_RETRY_AFTER: .*from 1s /],
    ['NATS_NAK_BACKOFF', '99ms', /^NATS_NAK_BACKOFF: .*from 100ms /],
    // below a second a storm is one alert per failure again; above an hour a summary is too late
    ['ALERT_COALESCE', '999ms', /^ALERT_COALESCE: .*from 1s to 1h, got "999ms"/],
    ['ALERT_COALESCE', '61m', /^ALERT_COALESCE: .*from 1s to 1h/],
    // secrets Telegram refuses or an attacker guesses
    ['WEBHOOK_SECRET', 'x', /^WEBHOOK_SECRET: expected 16 to 256 characters of A-Z, a-z, 0-9, _ and -/],
    ['WEBHOOK_SECRET', 'fifteen-chars15', /^WEBHOOK_SECRET: expected 16 to 256/],
    ['WEBHOOK_SECRET', 'sixteen chars ok!', /^WEBHOOK_SECRET: /],
    ['WEBHOOK_SECRET', 'a'.repeat(257), /^WEBHOOK_SECRET: /],
    // URLs the relay would fetch: http(s) only
    [
      'TELEGRAM_API_ROOT',
      'ftp://api.telegram.org',
      /^TELEGRAM_API_ROOT: expected the Bot API root URL as a http or https URL/,
    ],
    ['TELEGRAM_API_ROOT', 'postgres://db:5432/x', /^TELEGRAM_API_ROOT: .*http or https/],
    ['CAPTURE_URL', 'file:///etc/passwd', /^CAPTURE_URL: .*http or https/],
    ['CAPTURE_URL', 'javascript:alert(1)', /^CAPTURE_URL: /],
    ['TRACE_URL_TEMPLATE', 'javascript:alert("{trace_id}")', /^TRACE_URL_TEMPLATE: .*http or https/],
    ['TRACE_URL_TEMPLATE', 'https://jaeger.example/trace/', /^TRACE_URL_TEMPLATE: .*\{trace_id\}/],
    ['WEBHOOK_PUBLIC_URL', 'ws://example.com', /^WEBHOOK_PUBLIC_URL: /],
    ['DATABASE_URL', 'http://db:5432/x', /^DATABASE_URL: .*postgres or postgresql URL/],
    // counts, ports, rates, ids
    ['ADMIN_PORT', '65536', /^ADMIN_PORT: expected a TCP port: an integer from 0 to 65535/],
    ['WORKER_CONCURRENCY', '0', /^WORKER_CONCURRENCY: .*from 1 to 1000/],
    ['DB_POOL_MAX', '1', /^DB_POOL_MAX: .*from 2 to 1000/],
    ['SESSION_TTL', '30s', /^SESSION_TTL: .*from 1m to 3650d like 30d/],
    ['SESSION_TTL', 'off', /^SESSION_TTL: .*from 1m to 3650d/],
    ['SESSION_TTL', '3651d', /^SESSION_TTL: .*from 1m to 3650d/],
    ['SESSION_TTL', 'a month', /^SESSION_TTL: .*got "a month"/],
    ['RETRY_MAX_ATTEMPTS', '0', /^RETRY_MAX_ATTEMPTS: .*from 1 to 1000/],
    ['OUTBOUND_RATE_PER_BOT', '30/1ms', /^OUTBOUND_RATE_PER_BOT: .*WINDOW from 100ms to 24h/],
    ['OUTBOUND_RATE_PER_CHAT', '1000001/1s', /^OUTBOUND_RATE_PER_CHAT: .*COUNT from 1 to 100000/],
    ['ALLOWED_CHAT_IDS', '1,99999999999999999999', /^ALLOWED_CHAT_IDS: .*got "99999999999999999999"/],
    ['OPS_CHAT_ID', '99999999999999999999', /^OPS_CHAT_ID: .*at most 9007199254740991/],
    ['OPS_CHAT_ID', '0', /^OPS_CHAT_ID: /],
    // longer than the SQL normaliser (relay.outbound_normalize_chat) takes: alerts would silently stop
    ['OPS_CHAT_ID', `@${'a'.repeat(33)}`, /^OPS_CHAT_ID: .*@channelusername .*@ and 4 to 32 of A-Z, a-z, 0-9, _\)/],
    ['OPS_CHAT_ID', `@${'a'.repeat(64)}`, /^OPS_CHAT_ID: .*4 to 32/],
    ['OPS_CHAT_ID', '@abc', /^OPS_CHAT_ID: .*4 to 32/],
    ['OPS_CHAT_ID', '@ab-cd', /^OPS_CHAT_ID: .*4 to 32/],
  ])('%s=%p is refused', (variable, value, message) => {
    const problems = problemsOf({ [variable]: value });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(message);
  });

  it.each([
    ['STALE_AFTER', '2s', 2000],
    ['LEASE_TTL', '1s', 1000],
    ['POLL_TIMEOUT', '1s', 1000],
    ['POLL_TIMEOUT', '50s', 50_000],
    ['SHUTDOWN_TIMEOUT', '0', 0],
    ['SHUTDOWN_TIMEOUT', String(TIMER_MAX_MS), TIMER_MAX_MS],
    ['RETRY_BASE', '10ms', 10],
    ['OUTBOUND_MAX_RETRY_AFTER', '1s', 1000],
    ['NATS_NAK_BACKOFF', '100ms', 100],
    ['ALERT_COALESCE', '1s', 1000],
    ['ALERT_COALESCE', '1h', 3_600_000],
    ['WEBHOOK_SECRET', 'A-z_0'.repeat(4), 'A-z_0'.repeat(4)],
    ['WEBHOOK_SECRET', 'a'.repeat(256), 'a'.repeat(256)],
    ['TELEGRAM_API_ROOT', 'http://127.0.0.1:8081', 'http://127.0.0.1:8081'],
    ['CAPTURE_URL', 'https://collector.example/hook', 'https://collector.example/hook'],
    ['TRACE_URL_TEMPLATE', 'https://jaeger.example/trace/{trace_id}', 'https://jaeger.example/trace/{trace_id}'],
    ['DATABASE_URL', 'postgresql://u@h/db', 'postgresql://u@h/db'],
  ])('%s=%p at the edge of its range is accepted', (variable, value, parsed) => {
    expect((loadConfig({ [variable]: value }) as Record<string, unknown>)[variable]).toEqual(parsed);
  });

  it('the STALE_AFTER minimum leaves a live worker over a second of missed heartbeats', () => {
    // heartbeats every tick, stale after threshold without one (libs/queue/claim-loop.ts)
    const { tickMs, thresholdMs } = staleTiming(loadConfig({ STALE_AFTER: '2s' }).STALE_AFTER);
    expect(thresholdMs / tickMs).toBeGreaterThanOrEqual(4);
    expect(thresholdMs - tickMs).toBeGreaterThanOrEqual(1000);
  });

  it('RETRY_BASE above RETRY_CAP is refused, naming both', () => {
    expect(problemsOf({ RETRY_BASE: '5m', RETRY_CAP: '1m' })).toEqual([
      'RETRY_BASE: must not exceed RETRY_CAP (1m), got 5m',
    ]);
    expect(problemsOf({ RETRY_BASE: '1m', RETRY_CAP: '1m' })).toEqual([]);
    expect(problemsOf({ RETRY_BASE: '10m' })).toEqual(['RETRY_BASE: must not exceed RETRY_CAP (5m), got 10m']);
  });

  it('CAPTURE_URL: plain http only to a loopback host, unless CAPTURE_ALLOW_INSECURE=true', () => {
    expect(problemsOf({ CAPTURE_URL: 'http://collector.internal:8080/capture' })).toEqual([
      'CAPTURE_URL: plain http to a host that is not loopback (collector.internal) sends every capture unencrypted: use https, or set CAPTURE_ALLOW_INSECURE=true to accept it',
    ]);
    expect(problemsOf({ CAPTURE_URL: 'http://10.0.0.5/capture' })).toHaveLength(1);
    expect(problemsOf({ CAPTURE_URL: 'http://collector.internal/capture', CAPTURE_ALLOW_INSECURE: 'true' })).toEqual(
      [],
    );
    for (const ok of ['http://127.0.0.1:9/capture', 'http://localhost:9/capture', 'http://[::1]:9/capture'])
      expect(problemsOf({ CAPTURE_URL: ok })).toEqual([]);
    expect(problemsOf({ CAPTURE_URL: 'https://collector.example/capture' })).toEqual([]);
    expect(problemsOf({ CAPTURE_ALLOW_INSECURE: 'yes' })[0]).toMatch(/^CAPTURE_ALLOW_INSECURE: expected true or false/);
  });

  it('ports that would collide are refused', () => {
    expect(problemsOf({ INGRESS: 'webhook', WEBHOOK_PORT: '8080', ADMIN_PORT: '8080' })).toEqual([
      'WEBHOOK_PORT: must differ from ADMIN_PORT (8080) when INGRESS=webhook',
    ]);
    expect(problemsOf({ INGRESS: 'polling', WEBHOOK_PORT: '8080', ADMIN_PORT: '8080' })).toEqual([]);
    expect(problemsOf({ SANDBOX_PORT: '9000', SANDBOX_COLLECTOR_PORT: '9000' })).toEqual([
      'SANDBOX_COLLECTOR_PORT: must differ from SANDBOX_PORT (9000)',
    ]);
    expect(problemsOf({ SANDBOX_PORT: '0', SANDBOX_COLLECTOR_PORT: '0' })).toEqual([]);
  });

  it('METRICS_PORT: unset is off, 1-65535, and must not collide with a port the process also serves', () => {
    expect(loadConfig({}).METRICS_PORT).toBeUndefined();
    expect(loadConfig({}).METRICS_HOST).toBe('0.0.0.0');
    expect(loadConfig({ METRICS_PORT: '9464', METRICS_HOST: '127.0.0.1' })).toMatchObject({
      METRICS_PORT: 9464,
      METRICS_HOST: '127.0.0.1',
    });
    expect(loadConfig({ METRICS_PORT: '' }).METRICS_PORT).toBeUndefined(); // METRICS_PORT= in compose: off
    for (const bad of ['0', '65536', '-1', 'abc', '94.64'])
      expect(problemsOf({ METRICS_PORT: bad })).toEqual([
        `METRICS_PORT: expected a TCP port for /metrics and /health (unset: off): an integer from 1 to 65535, got "${bad}"`,
      ]);
    expect(problemsOf({ METRICS_PORT: '8080' })).toEqual([
      'METRICS_PORT: must differ from ADMIN_PORT (8080), got 8080',
    ]);
    expect(problemsOf({ METRICS_PORT: '9000', ADMIN_PORT: '9000' })).toEqual([
      'METRICS_PORT: must differ from ADMIN_PORT (9000), got 9000',
    ]);
    expect(problemsOf({ METRICS_PORT: '8443', INGRESS: 'webhook' })).toEqual([
      'METRICS_PORT: must differ from WEBHOOK_PORT (8443), got 8443',
    ]);
    expect(problemsOf({ METRICS_PORT: '8443', INGRESS: 'polling' })).toEqual([]);
    expect(problemsOf({ METRICS_PORT: '8091', NATS_URL: 'nats://127.0.0.1:4222' })).toEqual([
      'METRICS_PORT: must differ from JETSTREAM_HEALTH_PORT (8091), got 8091',
    ]);
    expect(problemsOf({ METRICS_PORT: '8091' })).toEqual([]);
    // sandbox ports only matter without a bot token (tg-relay start in sandbox mode)
    expect(problemsOf({ METRICS_PORT: '8081' })).toEqual([
      'METRICS_PORT: must differ from SANDBOX_PORT (8081), got 8081',
    ]);
    expect(problemsOf({ METRICS_PORT: '8081', TELEGRAM_BOT_TOKEN: '123:abc' })).toEqual([]);
  });

  it('every default is valid and within its own range', () => {
    expect(problemsOf({})).toEqual([]);
  });

  it('durationVar is exported for other modules: bounds and messages', () => {
    const v = durationVar('the retention period', { min: 60_000, max: 86_400_000 });
    expect(v.parse('5m')).toBe(300_000);
    expect(v.safeParse('30s').error?.issues[0].message).toBe('expected the retention period from 1m to 24h, got "30s"');
    expect(v.safeParse('2d').success).toBe(false);
    expect(durationVar('x').safeParse(String(TIMER_MAX_MS + 1)).success).toBe(false);
  });
});
