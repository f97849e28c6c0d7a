import { ConfigError, loadConfig, parseRetention } from '../../libs/config';

describe('retention configuration', () => {
  test('defaults: 14 days, 90 days, every 10 minutes', () => {
    const c = loadConfig({});
    expect([c.RETENTION, c.RETENTION_FAILED, c.PRUNE_EVERY]).toEqual([14 * 86_400_000, 90 * 86_400_000, 600_000]);
  });

  test('days, hours and minutes; 0 and off disable a class', () => {
    expect(parseRetention('14d')).toBe(14 * 86_400_000);
    expect(parseRetention(' 36h ')).toBe(36 * 3_600_000);
    expect(parseRetention('1.5d')).toBe(36 * 3_600_000);
    const c = loadConfig({ RETENTION: 'off', RETENTION_FAILED: '0', PRUNE_EVERY: 'OFF' });
    expect([c.RETENTION, c.RETENTION_FAILED, c.PRUNE_EVERY]).toEqual([null, null, null]);
  });

  test.each([
    ['RETENTION', '2 weeks'],
    ['RETENTION', '14'], // a bare number is ambiguous for a retention period: say the unit
    ['RETENTION', '30s'], // below the 1 minute floor
    ['RETENTION_FAILED', '-1d'],
    ['PRUNE_EVERY', '2d'],
    ['PRUNE_EVERY', '10ms'],
  ])('%s=%s is refused with a message naming the variable and the allowed form', (name, value) => {
    let err: unknown;
    try {
      loadConfig({ [name]: value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain(name);
    expect((err as Error).message).toMatch(/like 1\dm|like 14d|from 1s to 1d/);
  });
});

describe('SESSION_TTL', () => {
  test('defaults to 30 days; takes days, hours and minutes', () => {
    expect(loadConfig({}).SESSION_TTL).toBe(30 * 86_400_000);
    expect(loadConfig({ SESSION_TTL: '12h' }).SESSION_TTL).toBe(12 * 3_600_000);
    expect(loadConfig({ SESSION_TTL: '1m' }).SESSION_TTL).toBe(60_000);
    expect(loadConfig({ SESSION_TTL: '3650d' }).SESSION_TTL).toBe(3650 * 86_400_000);
  });
});
