import { z } from 'zod';
import { parseDuration } from './duration';
import { pruneEvery, retention } from './retention';

/**
 * Every environment variable tg-relay reads, with its default. The README's configuration table
 * mirrors this file; `describeConfig()` prints the effective values with secrets masked.
 */
export const ADMIN_PORT_DEFAULT = 8080;
export const TELEGRAM_API_ROOT_DEFAULT = 'https://api.telegram.org';
export const LEASE_TTL_MS_DEFAULT = 10_000;
export const POLL_TIMEOUT_MS_DEFAULT = 25_000;
export const WORKER_CONCURRENCY_DEFAULT = 16;
export const STALE_AFTER_MS_DEFAULT = 30_000;
export const RETRY_BASE_MS_DEFAULT = 1_000;
export const RETRY_CAP_MS_DEFAULT = 300_000;
export const RETRY_MAX_ATTEMPTS_DEFAULT = 12;
export const SHUTDOWN_TIMEOUT_MS_DEFAULT = 25_000;

const duration = (what: string) =>
  z.string().transform((v, ctx) => {
    const ms = parseDuration(v);
    if (ms === undefined) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `expected ${what} as a duration like 250ms, 5s, 2m or plain milliseconds, got "${v}"` });
      return z.NEVER;
    }
    return ms;
  });

const int = (what: string, min: number, max: number) =>
  z.string().transform((v, ctx) => {
    const n = Number(v.trim());
    if (!/^-?\d+$/.test(v.trim()) || n < min || n > max) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `expected ${what}: an integer from ${min} to ${max}, got "${v}"` });
      return z.NEVER;
    }
    return n;
  });

const url = (what: string) =>
  z.string().transform((v, ctx) => {
    try {
      const u = new URL(v);
      if (u.protocol !== 'http:' && u.protocol !== 'https:' && u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') throw new Error('protocol');
      return v;
    } catch {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `expected ${what} as a URL, got "${v}"` });
      return z.NEVER;
    }
  });

const chatIdList = z.string().transform((v, ctx) => {
  const items = v.split(',').map((s) => s.trim()).filter(Boolean);
  const bad = items.filter((s) => !/^-?\d+$/.test(s));
  if (bad.length) {
    ctx.addIssue({ code: z.ZodIssueCode.custom, message: `expected a comma-separated list of integer chat ids, got "${bad.join(', ')}"` });
    return z.NEVER;
  }
  return items.map((s) => BigInt(s).toString());
});

/** `30/1s`, `20/1m`, `1/s`: a count per window, for the outbound rate limits. */
const rate = (what: string) =>
  z.string().transform((v, ctx) => {
    const m = /^\s*(\d+)\s*\/\s*(\S+)\s*$/.exec(v);
    const windowMs = m ? parseDuration(/^\d/.test(m[2]) ? m[2] : `1${m[2]}`) : undefined;
    if (!m || !windowMs || Number(m[1]) < 1) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `expected ${what} as COUNT/WINDOW like 30/1s or 20/1m, got "${v}"` });
      return z.NEVER;
    }
    return { count: Number(m[1]), windowMs };
  });

const chatId = z.string().refine((v) => /^-?\d+$/.test(v.trim()) || /^@[A-Za-z0-9_]{4,}$/.test(v.trim()), {
  message: 'expected an integer chat id or @channelusername',
});

export const configSchema = z.object({
  DATABASE_URL: url('a PostgreSQL connection URL (postgres://user@host:5432/db)').optional(),
  TELEGRAM_BOT_TOKEN: z
    .string()
    .regex(/^\d+:[A-Za-z0-9_-]+$/, 'expected a bot token like 123456:ABC-DEF… (from @BotFather)')
    .optional(),
  TELEGRAM_API_ROOT: url('the Bot API root URL').default(TELEGRAM_API_ROOT_DEFAULT),
  CAPTURE_URL: url('the collector endpoint URL').optional(),
  ALLOWED_CHAT_IDS: chatIdList.default(''),
  OPS_CHAT_ID: chatId.optional(),
  BOT_HANDLERS: z.string().min(1).optional(),
  ADMIN_TOKEN: z.string().min(16, 'expected at least 16 characters').optional(),
  ADMIN_PORT: int('a TCP port', 0, 65535).default(String(ADMIN_PORT_DEFAULT)),
  ADMIN_HOST: z.string().min(1).default('127.0.0.1'),
  // admin API: more tokens with labels for the audit trail, `label:token,label:token` (ADMIN_TOKEN is labelled "admin")
  ADMIN_TOKENS: z.string().transform((v, ctx) => {
    const out: { label: string; token: string }[] = [];
    for (const item of v.split(',').map((s) => s.trim()).filter(Boolean)) {
      const i = item.indexOf(':');
      const label = item.slice(0, i);
      const token = item.slice(i + 1);
      if (i < 1 || !/^[A-Za-z0-9_.-]{1,64}$/.test(label) || token.length < 16 || out.some((t) => t.label === label)) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'expected label:token pairs separated by commas (labels of A-Z, a-z, 0-9, _ . -, unique; tokens of at least 16 characters)' });
        return z.NEVER;
      }
      out.push({ label, token });
    }
    return out;
  }).default(''),
  ADMIN_DOCS_PUBLIC: z.enum(['true', 'false']).transform((v) => v === 'true').default('false'),
  WEBHOOK_SECRET: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,256}$/, 'expected 1-256 characters of A-Z, a-z, 0-9, _ and - (Telegram secret_token)')
    .optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATA_DIR: z.string().min(1).default('.data'),

  // ingress
  INGRESS: z.enum(['polling', 'webhook']).default('polling'),
  DECODE_POLICY: z.enum(['stop', 'quarantine']).default('stop'),
  LEASE_TTL: duration('the poller lease period').default(String(LEASE_TTL_MS_DEFAULT)),
  POLL_TIMEOUT: duration('the getUpdates long-poll timeout').default(String(POLL_TIMEOUT_MS_DEFAULT)),
  WEBHOOK_PORT: int('a TCP port', 0, 65535).default('8443'),
  WEBHOOK_HOST: z.string().min(1).default('0.0.0.0'),
  WEBHOOK_PUBLIC_URL: url('the public HTTPS base URL Telegram calls for the webhook').optional(),
  // ingress: also create update.dispatch jobs for updates from chats outside ALLOWED_CHAT_IDS (never captures)
  DISPATCH_UNAUTHORIZED: z.enum(['true', 'false'], { message: 'expected true or false' }).transform((v) => v === 'true').default('false'),

  // workers
  WORKER_CONCURRENCY: int('the number of concurrent jobs per worker process', 1, 1000).default(String(WORKER_CONCURRENCY_DEFAULT)),
  STALE_AFTER: duration('how long a claimed job may stay without heartbeat before it is recovered').default(String(STALE_AFTER_MS_DEFAULT)),
  RETRY_BASE: duration('the first retry delay').default(String(RETRY_BASE_MS_DEFAULT)),
  RETRY_CAP: duration('the longest retry delay').default(String(RETRY_CAP_MS_DEFAULT)),
  RETRY_MAX_ATTEMPTS: int('the attempt budget', 1, 1000).default(String(RETRY_MAX_ATTEMPTS_DEFAULT)),
  CAPTURE_TIMEOUT: duration('the collector request timeout').default('10s'),
  SHUTDOWN_TIMEOUT: duration('how long shutdown waits for in-flight work').default(String(SHUTDOWN_TIMEOUT_MS_DEFAULT)),

  // update dispatch (docs/dispatch.md)
  HANDLER_TIMEOUT: duration('how long a bot handler may run before its attempt is abandoned and retried').default('20s'),
  // outbound: ctx.reply is enqueued with the handled mark (never twice, never for a failed handler)
  REPLY_MODE: z.enum(['direct', 'outbound']).default('outbound'),
  DISPATCH_ORDERING: z.enum(['chat', 'none']).default('chat'),

  // outbound relay (docs/outbound.md)
  OUTBOUND_RATE_MODE: z.enum(['proactive', 'reactive']).default('proactive'),
  OUTBOUND_RATE_PER_BOT: rate('the per-bot send rate (all workers together)').default('30/1s'),
  OUTBOUND_RATE_PER_CHAT: rate('the per-chat send rate').default('1/1s'),
  OUTBOUND_RATE_PER_GROUP: rate('the per-group send rate').default('20/1m'),
  OUTBOUND_SEND_TIMEOUT: duration('the sendMessage request timeout').default('15s'),

  // sandbox
  SANDBOX_HOST: z.string().min(1).default('127.0.0.1'),
  SANDBOX_PORT: int('a TCP port', 0, 65535).default('8081'),
  SANDBOX_COLLECTOR_PORT: int('a TCP port', 0, 65535).default('8082'),

  // retention (docs/retention.md): finished work older than RETENTION, failed/resolved/audit rows older than RETENTION_FAILED are deleted
  RETENTION: retention('how long delivered/handled work is kept').default('14d'),
  RETENTION_FAILED: retention('how long failed work, resolved quarantine and audit rows are kept').default('90d'),
  PRUNE_EVERY: pruneEvery.default('10m'),
});

export type Config = z.output<typeof configSchema>;

/** Variables whose values are masked whenever the configuration is printed. */
export const SECRET_VARIABLES = ['TELEGRAM_BOT_TOKEN', 'ADMIN_TOKEN', 'ADMIN_TOKENS', 'WEBHOOK_SECRET', 'DATABASE_URL'] as const;
