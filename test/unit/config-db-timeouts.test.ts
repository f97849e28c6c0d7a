import { ConfigError, loadConfig } from '../../libs/config';
import { timeoutsFromConfig } from '../../libs/db/pool';

describe('DB_* session timeouts', () => {
  it('default to 30s / 10s / 30s and reach the pools as milliseconds', () => {
    const c = loadConfig({});
    expect(timeoutsFromConfig(c)).toEqual({ statementMs: 30_000, lockMs: 10_000, idleInTransactionMs: 30_000 });
    expect(
      timeoutsFromConfig(
        loadConfig({ DB_STATEMENT_TIMEOUT: '2m', DB_LOCK_TIMEOUT: '0', DB_IDLE_IN_TRANSACTION_TIMEOUT: '5s' }),
      ),
    ).toEqual({
      statementMs: 120_000,
      lockMs: 0,
      idleInTransactionMs: 5_000,
    });
  });

  it.each([
    ['DB_STATEMENT_TIMEOUT', '10ms'],
    ['DB_LOCK_TIMEOUT', '2h'],
    ['DB_IDLE_IN_TRANSACTION_TIMEOUT', 'soon'],
  ])('%s=%s is refused with the variable and the allowed range', (name, value) => {
    let err: unknown;
    try {
      loadConfig({ [name]: value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain(name);
    expect((err as Error).message).toMatch(/0 \(off\) or a duration from \d+ms to 1h|expected/);
  });
});
