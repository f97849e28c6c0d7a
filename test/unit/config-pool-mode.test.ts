import { ConfigError, describeConfig, loadConfig, workPollIntervalMs } from '../../libs/config';
import { beginStatement, createPool, sessionOptions } from '../../libs/db/pool';

const refusal = (env: Record<string, string>): string => {
  try {
    loadConfig(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error('accepted');
};

describe('DB_POOL_MODE, DATABASE_DIRECT_URL, WORK_POLL_INTERVAL', () => {
  it('default to session, unset, and a poll of 2s (500ms in transaction mode)', () => {
    const c = loadConfig({});
    expect(c.DB_POOL_MODE).toBe('session');
    expect(c.DATABASE_DIRECT_URL).toBeUndefined();
    expect(workPollIntervalMs(c)).toBe(2_000);
    expect(workPollIntervalMs(loadConfig({ DB_POOL_MODE: 'transaction' }))).toBe(500);
    expect(workPollIntervalMs(loadConfig({ DB_POOL_MODE: 'transaction', WORK_POLL_INTERVAL: '1s' }))).toBe(1_000);
  });

  it('refuse bad values naming the variable and what it allows', () => {
    expect(refusal({ DB_POOL_MODE: 'statement' })).toMatch(/DB_POOL_MODE: expected session .* or transaction/);
    expect(refusal({ WORK_POLL_INTERVAL: '10ms' })).toMatch(/WORK_POLL_INTERVAL: expected .* from 50ms to 1m/);
    expect(refusal({ WORK_POLL_INTERVAL: '5m' })).toMatch(/WORK_POLL_INTERVAL: expected .* from 50ms to 1m/);
    expect(refusal({ DATABASE_DIRECT_URL: 'mysql://x' })).toMatch(/DATABASE_DIRECT_URL: expected .*postgres/);
  });

  it("DATABASE_DIRECT_URL's password is masked when the configuration is printed", () => {
    const lines = describeConfig(loadConfig({ DATABASE_DIRECT_URL: 'postgres://u:hunter2secret@db:5432/x' }));
    expect(lines).toContain('DATABASE_DIRECT_URL=postgres://u:****@db:5432/x');
    expect(lines.join('\n')).not.toContain('hunter2secret');
  });
});

describe('a transaction-mode pool', () => {
  it('sends no session limits as startup parameters, and opens each transaction with them as SET LOCAL', async () => {
    expect(sessionOptions({}, 'transaction')).not.toHaveProperty('statement_timeout');
    expect(sessionOptions({}, 'session')).toMatchObject({ statement_timeout: 30_000, lock_timeout: 10_000 });
    const tx = createPool('postgres://nobody@127.0.0.1:1/x', {
      poolMode: 'transaction',
      timeouts: { statementMs: 4_000, lockMs: 0, idleInTransactionMs: 5_000 },
    });
    const session = createPool('postgres://nobody@127.0.0.1:1/x');
    try {
      expect(beginStatement(tx)).toBe(
        'begin; set local statement_timeout = 4000; set local idle_in_transaction_session_timeout = 5000',
      );
      expect(beginStatement(session)).toBe('begin');
    } finally {
      await Promise.all([tx.end(), session.end()]);
    }
  });
});
