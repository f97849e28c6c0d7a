import { ConfigError, describeConfig, loadConfig, parseDuration } from '../../libs/config';

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
  });

  it('parses lists and durations', () => {
    const c = loadConfig({ ALLOWED_CHAT_IDS: '1, -100200, 3', LEASE_TTL: '2s', POLL_TIMEOUT: '500ms' });
    expect(c.ALLOWED_CHAT_IDS).toEqual(['1', '-100200', '3']);
    expect(c.LEASE_TTL).toBe(2000);
    expect(c.POLL_TIMEOUT).toBe(500);
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

  it('reports every bad variable at once', () => {
    expect(() => loadConfig({ ADMIN_PORT: 'x', LEASE_TTL: 'y' })).toThrow(/ADMIN_PORT[\s\S]*LEASE_TTL/);
  });

  it('masks secrets when describing the effective configuration', () => {
    const lines = describeConfig(
      loadConfig({ TELEGRAM_BOT_TOKEN: '123456:AAHsecretsecretsecretsecret', ADMIN_TOKEN: 'admin-token-0123456789', DATABASE_URL: 'postgres://u:pw@h:5432/d' }),
    ).join('\n');
    expect(lines).not.toContain('AAHsecret');
    expect(lines).not.toContain('admin-token-0123456789');
    expect(lines).not.toContain(':pw@');
    expect(lines).toContain('TELEGRAM_BOT_TOKEN=123456:****');
  });
});
