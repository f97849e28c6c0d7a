import { Writable } from 'node:stream';
import { createLogger } from '../../libs/observability/logger';

/**
 * real pino output, parsed. `{ err }` keeps message and stack (redacted of the
 * bot token); `log.error(err)` without a message never puts an unredacted token into `msg`.
 */
const TOKEN = '123456789:AAFakeTokenForTestsOnly_abcdefghij';
const SECRET = 'AAFakeTokenForTestsOnly';
const URL_WITH_TOKEN = `https://api.telegram.org/bot${TOKEN}/sendMessage`;

/** A serialized error as pino writes it. */
interface LoggedError {
  message: string;
  stack: string;
  code?: string;
  cause: LoggedError;
}
/** The fields of a JSON log line these tests read. */
interface LogRecord {
  [key: string]: unknown;
  msg: string;
  err: LoggedError;
  error: LoggedError;
  details: { errors: unknown[] };
}

function capture(level = 'trace') {
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk, _e, cb) => (lines.push(String(chunk)), cb()) });
  const log = createLogger({ level, destination: sink });
  return { log, lines, records: () => lines.map((l) => JSON.parse(l) as LogRecord) };
}

function tokenError(): Error {
  const err = new Error(`request to ${URL_WITH_TOKEN} failed: ECONNRESET (token ${TOKEN})`);
  err.stack = `Error: request to ${URL_WITH_TOKEN} failed\n    at send (/app/libs/telegram/client.ts:10:5)\n    at /bot${TOKEN}/x`;
  (err as Error & { code: string }).code = 'ECONNRESET';
  return err;
}

test('{ err } keeps the error message, stack, type and code', () => {
  const { log, records } = capture();
  const err = new Error('writing outcomes failed: value too long');
  (err as Error & { code: string }).code = '22001';
  log.error({ err, batch: 3 }, 'writing outcomes failed; retrying');
  const [r] = records();
  expect(r.msg).toBe('writing outcomes failed; retrying');
  expect(r.batch).toBe(3);
  expect(r.err).toMatchObject({ type: 'Error', message: 'writing outcomes failed: value too long', code: '22001' });
  expect(r.err.stack).toContain('writing outcomes failed: value too long');
  expect(r.err.stack).toContain('logger.test.ts');
});

test('a token inside an error message and stack is redacted, the rest kept', () => {
  const { log, lines, records } = capture();
  log.warn({ err: tokenError() }, 'send failed');
  expect(lines.join('')).not.toContain(SECRET);
  const [r] = records();
  expect(r.err.message).toBe(
    'request to https://api.telegram.org/bot<token>/sendMessage failed: ECONNRESET (token <token>)',
  );
  expect(r.err.stack).toContain('https://api.telegram.org/bot<token>/sendMessage failed');
  expect(r.err.stack).toContain('/app/libs/telegram/client.ts:10:5');
  expect(r.err.code).toBe('ECONNRESET');
});

test('log.error(err) with no message: msg is the redacted error message, err is kept', () => {
  const { log, lines, records } = capture();
  log.error(tokenError());
  expect(lines.join('')).not.toContain(SECRET);
  const [r] = records();
  expect(r.msg).toBe('request to https://api.telegram.org/bot<token>/sendMessage failed: ECONNRESET (token <token>)');
  expect(r.err.message).toBe(r.msg);
  expect(r.err.stack).toContain('/bot<token>/sendMessage');
});

test('{ err } with no message: msg is the redacted error message', () => {
  const { log, lines, records } = capture();
  log.error({ err: tokenError() });
  expect(lines.join('')).not.toContain(SECRET);
  expect(records()[0].msg).toContain('bot<token>/sendMessage');
});

test('errors under other keys, nested, in arrays and as causes keep their message (redacted)', () => {
  const { log, lines, records } = capture();
  const outer = new Error('outer', { cause: tokenError() });
  log.error({ error: outer, details: { errors: [tokenError()] } }, 'several');
  expect(lines.join('')).not.toContain(SECRET);
  const [r] = records();
  expect(r.error.message).toBe('outer');
  expect(r.error.stack).toContain('Error: outer');
  expect(r.error.cause.message).toContain('bot<token>/sendMessage');
  expect(r.details.errors[0]).toMatchObject({ message: expect.stringContaining('bot<token>'), code: 'ECONNRESET' });
});

test('a Bot API URL in a field, a format argument or a child binding is redacted', () => {
  const { log, lines, records } = capture();
  log.child({ url: URL_WITH_TOKEN }).info({ target: URL_WITH_TOKEN }, 'calling %s now', URL_WITH_TOKEN);
  log.info('%o', { url: URL_WITH_TOKEN });
  expect(lines.join('')).not.toContain(SECRET);
  const [a, b] = records();
  expect(a.msg).toBe('calling https://api.telegram.org/bot<token>/sendMessage now');
  expect(a.target).toBe('https://api.telegram.org/bot<token>/sendMessage');
  expect(b.msg).toContain('bot<token>');
});
