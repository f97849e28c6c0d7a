import { Writable } from 'node:stream';
import { createLogger } from '../../libs/observability/logger';
import { redactToken } from '../../libs/observability/redact';

const TOKEN = '123456789:AAFakeTokenForTestsOnly_abcdefghij';

describe('token redaction', () => {
  it('strips the token from Bot API URLs and free text', () => {
    expect(redactToken(`request to https://api.telegram.org/bot${TOKEN}/getUpdates failed`)).toBe(
      'request to https://api.telegram.org/bot<token>/getUpdates failed',
    );
    expect(redactToken(`token is ${TOKEN}`)).toBe('token is <token>');
  });

  it('never lets the token reach a log line, in messages, fields or errors', () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _e, cb) => (lines.push(String(chunk)), cb()) });
    const log = createLogger({ level: 'info', destination: sink });
    log.info(`calling /bot${TOKEN}/getMe`);
    log.info({ url: `http://x/bot${TOKEN}/sendMessage`, token: TOKEN }, 'call');
    log.error({ err: new Error(`connect ECONNREFUSED http://x/bot${TOKEN}/getUpdates`) }, 'failed');
    const all = lines.join('');
    expect(lines).toHaveLength(3);
    expect(all).not.toContain('AAFakeTokenForTestsOnly');
    expect(all).toContain('<token>');
  });
});
