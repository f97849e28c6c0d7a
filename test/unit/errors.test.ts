/**
 * The error code registry (libs/errors/codes.ts) is complete and consistent: every RELAY_* code the
 * product names is registered once, the admin API's statuses agree with it, and the error classes
 * share the base class with their code, name and cause chaining intact.
 */
import fs from 'node:fs';
import path from 'node:path';
import { RELAY_CODES, RelayError } from '../../libs/errors';
import { ADMIN_ERRORS, AdminError } from '../../libs/admin/errors';
import { CaptureKeyConflictError } from '../../libs/captures/errors';
import { ConfigError } from '../../libs/config/errors';
import { MigrationError } from '../../libs/db/migrate';
import { DispatchAbortedError, HandlerTimeoutError, TelegrafRefusedError } from '../../libs/dispatch/errors';
import { LeaseLostError } from '../../libs/ingress/errors';
import { OutboundConflictError, OutboundValidationError } from '../../libs/outbound/errors';
import { QueueError } from '../../libs/queue/errors';
import { TelegramApiError, TelegramNetworkError } from '../../libs/telegram/errors';

const ROOT = path.resolve(__dirname, '../..');

function sources(dir: string, out: string[] = []): string[] {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== 'node_modules' && e.name !== 'dist') sources(p, out);
    } else if (/\.(ts|tsx|sql)$/.test(e.name)) out.push(p);
  }
  return out;
}

describe('error code registry', () => {
  it('registers every RELAY_* code named in libs/, apps/ and sql/', () => {
    const used = new Map<string, string>(); // code → first file naming it, the registry itself excluded
    for (const dir of ['libs', 'apps', 'sql']) {
      for (const file of sources(path.join(ROOT, dir))) {
        const rel = path.relative(ROOT, file);
        if (rel === path.join('libs', 'errors', 'codes.ts')) continue;
        for (const m of fs.readFileSync(file, 'utf8').matchAll(/\bRELAY_[A-Z0-9_]+\b/g)) {
          if (m[0] !== 'RELAY_CODES' && !used.has(m[0])) used.set(m[0], rel);
        }
      }
    }
    expect(used.size).toBeGreaterThan(40);
    const missing = [...used].filter(([code]) => !(code in RELAY_CODES)).map(([code, file]) => `${code} (${file})`);
    expect(missing).toEqual([]);
    // and nothing registered that nobody uses (a stale entry is a lie in the API docs)
    expect(Object.keys(RELAY_CODES).filter((c) => !used.has(c))).toEqual([]);
  });

  it('codes are well-formed and each says what it means', () => {
    for (const [code, entry] of Object.entries(RELAY_CODES)) {
      expect({ code, ok: /^RELAY_[A-Z0-9_]+$/.test(code) && entry.meaning.length > 10 }).toEqual({ code, ok: true });
    }
  });

  it("the admin API's statuses are the registry's", () => {
    for (const [code, status] of Object.entries(ADMIN_ERRORS)) {
      expect({ code, status }).toEqual({
        code,
        status: (RELAY_CODES[code as keyof typeof RELAY_CODES] as { http?: number }).http,
      });
    }
  });

  it('the error classes extend RelayError and keep their names, codes and causes', () => {
    const cause = new Error('root');
    const errors: [Error & { code: string }, string, string][] = [
      [new AdminError('RELAY_ADMIN_NOT_FOUND', 'x'), 'AdminError', 'RELAY_ADMIN_NOT_FOUND'],
      [new CaptureKeyConflictError(['k']), 'CaptureKeyConflictError', 'RELAY_CAPTURE_KEY_CONFLICT'],
      [new ConfigError('x'), 'ConfigError', 'RELAY_CONFIG_INVALID'],
      [new MigrationError('x', { cause }), 'MigrationError', 'RELAY_MIGRATION_FAILED'],
      [new HandlerTimeoutError(5), 'HandlerTimeoutError', 'RELAY_HANDLER_TIMEOUT'],
      [new DispatchAbortedError(cause), 'DispatchAbortedError', 'RELAY_DISPATCH_ABORTED'],
      [new TelegrafRefusedError('x', cause), 'TelegrafRefusedError', 'RELAY_TELEGRAF_REFUSED'],
      [new LeaseLostError('1', 1), 'LeaseLostError', 'RELAY_LEASE_LOST'],
      [
        new OutboundValidationError([{ field: 'text', problem: 'is empty' }]),
        'OutboundValidationError',
        'RELAY_OUTBOUND_INVALID',
      ],
      [
        new OutboundConflictError('m', { id: '1', state: 'pending' }),
        'OutboundConflictError',
        'RELAY_OUTBOUND_CONFLICT',
      ],
      [new QueueError('RELAY_CLAIM_LOST', 'x', { cause }), 'QueueError', 'RELAY_CLAIM_LOST'],
      [
        new TelegramApiError('sendMessage', { errorCode: 400, description: 'Bad Request' }),
        'TelegramApiError',
        'RELAY_TELEGRAM_API_ERROR',
      ],
      [
        new TelegramNetworkError('getMe', 'connection', 'down', false, { cause }),
        'TelegramNetworkError',
        'RELAY_TELEGRAM_NETWORK_ERROR',
      ],
    ];
    for (const [e, name, code] of errors) {
      expect({ name: e.name, code: e.code, relay: e instanceof RelayError }).toEqual({ name, code, relay: true });
    }
    expect((errors[3][0] as Error).cause).toBe(cause);
    expect((errors[5][0] as Error).cause).toBe(cause);
    expect((errors[10][0] as Error).cause).toBe(cause);
    expect((errors[12][0] as Error).cause).toBeInstanceOf(Error); // scrubbed copy (no token), still chained
  });
});
