import { z } from 'zod';
import { TELEGRAM_SECRET_TOKEN_MAX, TELEGRAM_UPLOAD_MAX } from '../telegram/limits';
import { parseDuration } from './duration';
import {
  DB_IDLE_IN_TRANSACTION_TIMEOUT_MS_DEFAULT,
  DB_LOCK_TIMEOUT_MS_DEFAULT,
  DB_STATEMENT_TIMEOUT_MS_DEFAULT,
} from '../db/pool';
import { pruneEvery, retention, sessionTtl } from './retention';

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
/**
 * WORK_POLL_INTERVAL: how often an idle claim loop looks for work. With DB_POOL_MODE=session it is
 * the safety net behind LISTEN/NOTIFY wake-ups; with DB_POOL_MODE=transaction (no LISTEN through a
 * transaction pooler) it is the wake-up itself, so new work waits up to this long.
 */
export const WORK_POLL_INTERVAL_MS_DEFAULT = 2_000;
export const WORK_POLL_INTERVAL_TRANSACTION_MS_DEFAULT = 500;
/** Below this an idle fleet polls the database in a busy loop; above it work waits too long. */
export const WORK_POLL_INTERVAL_MIN_MS = 50;
export const WORK_POLL_INTERVAL_MAX_MS = 60_000;

/** ALERT_COALESCE: at most one alert about failed messages per window per (bot, operators' chat). */
export const ALERT_COALESCE_MS_DEFAULT = 60_000;
export const ALERT_COALESCE_MIN_MS = 1_000;
export const ALERT_COALESCE_MAX_MS = 3_600_000;

/** The longest delay a Node timer holds: setTimeout/setInterval treat anything longer as 1 ms. */
export const TIMER_MAX_MS = 2 ** 31 - 1;

/** `1500` → "1.5s", `120000` → "2m": how a limit is shown in error messages. */
export function formatMs(ms: number): string {
  if (ms === TIMER_MAX_MS) return `${ms}ms (the timer maximum, about 24.8 days)`;
  for (const [unit, size] of [
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const)
    if (ms >= size && ms % (size / 10) === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/**
 * A duration variable (`250ms`, `5s`, `2m`, `1h` or milliseconds) within [min, max] ms; max
 * defaults to what a timer holds. Exported for every module that adds a duration variable.
 */
export const durationVar = (what: string, opts: { min?: number; max?: number } = {}) => {
  const min = opts.min ?? 0;
  const max = Math.min(opts.max ?? TIMER_MAX_MS, TIMER_MAX_MS);
  return z.string().transform((v, ctx) => {
    const ms = parseDuration(v);
    if (ms === undefined) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: `expected ${what} as a duration like 250ms, 5s, 2m or plain milliseconds, from ${formatMs(min)} to ${formatMs(max)}, got "${v}"`,
      });
      return z.NEVER;
    }
    if (ms < min || ms > max) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: `expected ${what} from ${formatMs(min)} to ${formatMs(max)}, got "${v}"`,
      });
      return z.NEVER;
    }
    return ms;
  });
};
const duration = durationVar;

/**
 * Lower bounds of the timing variables, and why:
 * - STALE_AFTER: workers heartbeat every STALE_AFTER/5 and a claim is stale after 4/5 of it without
 *   one (libs/queue/claim-loop.ts staleTiming), so a live worker rides out 3/5·STALE_AFTER of
 *   database latency or event-loop stall before its claims are taken and sent twice. 2 s keeps that
 *   above 1 s (heartbeat every 400 ms); 0 made every live claim stale at once.
 * - LEASE_TTL: the poller renews every LEASE_TTL/3 and gives the lease up after LEASE_TTL without
 *   a successful renewal. Batches are fenced by the lease generation, so a short lease costs
 *   take-overs (pauses), not duplicates: 1 s still rides out over 600 ms of failed renewals.
 * - POLL_TIMEOUT: getUpdates long-polls whole seconds (timeout=0 is short polling, a busy loop);
 *   Telegram's maximum is 50 s (FACTS.md).
 */
export const STALE_AFTER_MIN_MS = 2_000;
export const LEASE_TTL_MIN_MS = 1_000;
export const POLL_TIMEOUT_MIN_MS = 1_000;
export const POLL_TIMEOUT_MAX_MS = 50_000;
/** Retry delays below this are a busy loop against a failing peer. */
export const RETRY_BASE_MIN_MS = 10;
/** Request and handler timeouts: below a second only healthy peers on a quiet network answer in time. */
export const REQUEST_TIMEOUT_MIN_MS = 1_000;
/** Telegram's secret_token allows 1-256 characters; fewer than 16 are guessable. */
export const WEBHOOK_SECRET_MIN_LENGTH = 16;
/**
 * OUTBOUND_MAX_UPLOAD: the bytes one relayed call may upload (REPLY_MODE=outbound reads a handler's
 * files at the call and stores them with its outbound row). 20 MB by default; at most the 50 MB
 * Telegram accepts from a bot for one file, since the row is held in memory and in one bytea.
 */
export const OUTBOUND_MAX_UPLOAD_DEFAULT = 20 * 1024 * 1024;
export const OUTBOUND_MAX_UPLOAD_MAX = TELEGRAM_UPLOAD_MAX;

/** Telegram ids have at most 52 significant bits; 16 digits also keep them exact in JavaScript. */
const MAX_CHAT_ID = Number.MAX_SAFE_INTEGER;

const int = (what: string, min: number, max: number) =>
  z.string().transform((v, ctx) => {
    const n = Number(v.trim());
    if (!/^-?\d+$/.test(v.trim()) || n < min || n > max) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: `expected ${what}: an integer from ${min} to ${max}, got "${v}"`,
      });
      return z.NEVER;
    }
    return n;
  });

const url = (what: string, protocols: readonly string[] = ['http:', 'https:']) =>
  z.string().transform((v, ctx) => {
    let u: URL | undefined;
    try {
      u = new URL(v);
    } catch {
      u = undefined;
    }
    if (!u || !protocols.includes(u.protocol) || !u.hostname) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: `expected ${what} as a ${protocols.map((p) => p.slice(0, -1)).join(' or ')} URL, got "${v}"`,
      });
      return z.NEVER;
    }
    return v;
  });

const chatIdList = z.string().transform((v, ctx) => {
  const items = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = items.filter((s) => !/^-?\d{1,16}$/.test(s) || Math.abs(Number(s)) > MAX_CHAT_ID);
  if (bad.length) {
    ctx.addIssue({
      code: z.ZodIssueCode.custom,
      message: `expected a comma-separated list of integer chat ids, got "${bad.join(', ')}" (each at most ${MAX_CHAT_ID} in absolute value)`,
    });
    return z.NEVER;
  }
  return items.map((s) => BigInt(s).toString());
});

const RATE_COUNT_MAX = 100_000;
const RATE_WINDOW_MIN_MS = 100;
const RATE_WINDOW_MAX_MS = 86_400_000;

/** `30/1s`, `20/1m`, `1/s`: a count per window, for the outbound rate limits. */
const rate = (what: string) =>
  z.string().transform((v, ctx) => {
    const m = /^\s*(\d+)\s*\/\s*(\S+)\s*$/.exec(v);
    const windowMs = m ? parseDuration(/^\d/.test(m[2]) ? m[2] : `1${m[2]}`) : undefined;
    if (
      !m ||
      !windowMs ||
      Number(m[1]) < 1 ||
      Number(m[1]) > RATE_COUNT_MAX ||
      windowMs < RATE_WINDOW_MIN_MS ||
      windowMs > RATE_WINDOW_MAX_MS
    ) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: `expected ${what} as COUNT/WINDOW like 30/1s or 20/1m (COUNT from 1 to ${RATE_COUNT_MAX}, WINDOW from ${formatMs(RATE_WINDOW_MIN_MS)} to ${formatMs(RATE_WINDOW_MAX_MS)}), got "${v}"`,
      });
      return z.NEVER;
    }
    return { count: Number(m[1]), windowMs };
  });

// The channel names relay.outbound_normalize_chat takes (sql/functions): one the database would refuse
// would pass here and then silently stop every alert, so both rules are the same.
const CHANNEL_USERNAME = /^@[A-Za-z0-9_]{4,32}$/;
const chatId = z
  .string()
  .refine(
    (v) =>
      (/^-?\d{1,16}$/.test(v.trim()) && Math.abs(Number(v)) <= MAX_CHAT_ID && Number(v) !== 0) ||
      CHANNEL_USERNAME.test(v.trim()),
    {
      message: `expected an integer chat id or @channelusername (a non-zero id, at most ${MAX_CHAT_ID} in absolute value; @ and 4 to 32 of A-Z, a-z, 0-9, _)`,
    },
  );

/** nats://host:port (also tls://, ws://, wss://, or host:port), comma-separated for a cluster. */
const natsUrls = z.string().transform((v, ctx) => {
  const items = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const ok =
    items.length > 0 &&
    items.every((s) => /^((nats|tls|ws|wss):\/\/)?([^\s/@:]+(:[^\s/@]*)?@)?[A-Za-z0-9.\-[\]:]+(:\d{1,5})?$/.test(s));
  if (!ok) {
    ctx.addIssue({
      code: z.ZodIssueCode.custom,
      message: `expected NATS server URLs like nats://127.0.0.1:4222 (comma-separated), got "${v.replace(/\/\/[^@/]*@/, '//****@')}"`,
    });
    return z.NEVER;
  }
  return items.join(',');
});

const natsSubject = (what: string) =>
  z.string().refine((v) => /^[^\s.]+(\.[^\s.]+)*$/.test(v), {
    message: `expected ${what}: dot-separated tokens without spaces, like telegram.outbound`,
  });
/** A database session limit: 0 (off) or a duration from `minMs` to 1 h. */
function dbLimit(what: string, minMs: number) {
  return duration(what).refine((ms) => ms === 0 || (ms >= minMs && ms <= 3_600_000), {
    message: `expected ${what}: 0 (off) or a duration from ${minMs}ms to 1h`,
  });
}

export const configSchema = z.object({
  DATABASE_URL: url('a PostgreSQL connection URL (postgres://user@host:5432/db)', [
    'postgres:',
    'postgresql:',
  ]).optional(),
  // how DATABASE_URL reaches PostgreSQL (docs/pgbouncer.md): session = one server session per connection
  // (direct, or PgBouncer pool_mode=session); transaction = a transaction pooler (PgBouncer pool_mode=transaction)
  DB_POOL_MODE: z
    .enum(['session', 'transaction'], {
      message: 'expected session (a direct connection) or transaction (behind a transaction-pooling proxy)',
    })
    .default('session'),
  // a session-level connection (direct, bypassing the pooler) for migrations; required by
  // `tg-relay migrate` and `tg-relay start` when DB_POOL_MODE=transaction
  DATABASE_DIRECT_URL: url('a PostgreSQL connection URL that bypasses the transaction pooler', [
    'postgres:',
    'postgresql:',
  ]).optional(),
  TELEGRAM_BOT_TOKEN: z
    .string()
    .regex(/^\d+:[A-Za-z0-9_-]+$/, 'expected a bot token like 123456:ABC-DEF… (from @BotFather)')
    .optional(),
  TELEGRAM_API_ROOT: url('the Bot API root URL').default(TELEGRAM_API_ROOT_DEFAULT),
  CAPTURE_URL: url('the collector endpoint URL').optional(),
  // collectors may be remote (a fleet needs them), but captures carry message text: plain http only to loopback
  CAPTURE_ALLOW_INSECURE: z
    .enum(['true', 'false'], { message: 'expected true or false' })
    .transform((v) => v === 'true')
    .default('false'),
  // dashboard: link of a trace id, e.g. https://jaeger.example/trace/{trace_id}
  TRACE_URL_TEMPLATE: z
    .string()
    .refine((v) => v.includes('{trace_id}'), {
      message: 'expected a URL containing {trace_id} (e.g. https://jaeger.example/trace/{trace_id})',
    })
    .pipe(url('a trace viewer URL template'))
    .optional(),
  ALLOWED_CHAT_IDS: chatIdList.default(''),
  OPS_CHAT_ID: chatId.optional(),
  BOT_HANDLERS: z.string().min(1).optional(),
  ADMIN_TOKEN: z.string().min(16, 'expected at least 16 characters').optional(),
  // the bot registry (relay.bots): the AES-256-GCM key its tokens are encrypted with; 32 bytes, hex or base64
  TOKEN_ENCRYPTION_KEY: z
    .string()
    .regex(
      /^\s*(?:[0-9a-fA-F]{64}|[A-Za-z0-9+/]{43}=)\s*$/,
      'expected 32 bytes as 64 hex digits or 44 base64 characters (e.g. `openssl rand -hex 32`)',
    )
    .optional(),
  ADMIN_PORT: int('a TCP port', 0, 65535).default(String(ADMIN_PORT_DEFAULT)),
  ADMIN_HOST: z.string().min(1).default('127.0.0.1'),
  // admin API: more tokens with labels for the audit trail, `label:token,label:token` (ADMIN_TOKEN is labelled "admin")
  ADMIN_TOKENS: z
    .string()
    .transform((v, ctx) => {
      const out: { label: string; token: string }[] = [];
      for (const item of v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)) {
        const i = item.indexOf(':');
        const label = item.slice(0, i);
        const token = item.slice(i + 1);
        if (i < 1 || !/^[A-Za-z0-9_.-]{1,64}$/.test(label) || token.length < 16 || out.some((t) => t.label === label)) {
          ctx.addIssue({
            code: z.ZodIssueCode.custom,
            message:
              'expected label:token pairs separated by commas (labels of A-Z, a-z, 0-9, _ . -, unique; tokens of at least 16 characters)',
          });
          return z.NEVER;
        }
        out.push({ label, token });
      }
      return out;
    })
    .default(''),
  ADMIN_DOCS_PUBLIC: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .default('false'),
  WEBHOOK_SECRET: z
    .string()
    .regex(
      new RegExp(`^[A-Za-z0-9_-]{${WEBHOOK_SECRET_MIN_LENGTH},${TELEGRAM_SECRET_TOKEN_MAX}}$`),
      `expected ${WEBHOOK_SECRET_MIN_LENGTH} to ${TELEGRAM_SECRET_TOKEN_MAX} characters of A-Z, a-z, 0-9, _ and - (Telegram secret_token; e.g. \`openssl rand -hex 24\`)`,
    )
    .optional(),
  // per-process /metrics, /health/live and /health/ready (README "Metrics and health"); unset = no listener
  METRICS_PORT: int('a TCP port for /metrics and /health (unset: off)', 1, 65535).optional(),
  METRICS_HOST: z.string().min(1).default('0.0.0.0'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATA_DIR: z.string().min(1).default('.data'),

  // ingress
  INGRESS: z.enum(['polling', 'webhook']).default('polling'),
  DECODE_POLICY: z.enum(['stop', 'quarantine']).default('stop'),
  LEASE_TTL: duration('the poller lease period', { min: LEASE_TTL_MIN_MS }).default(String(LEASE_TTL_MS_DEFAULT)),
  POLL_TIMEOUT: duration('the getUpdates long-poll timeout', {
    min: POLL_TIMEOUT_MIN_MS,
    max: POLL_TIMEOUT_MAX_MS,
  }).default(String(POLL_TIMEOUT_MS_DEFAULT)),
  // a poller without TELEGRAM_BOT_TOKEN: how many registered bots it polls at most (one long poll each)
  POLLER_MAX_BOTS: int('the most bots one fleet poller polls', 1, 10_000).default('100'),
  WEBHOOK_PORT: int('a TCP port', 0, 65535).default('8443'),
  WEBHOOK_HOST: z.string().min(1).default('0.0.0.0'),
  WEBHOOK_PUBLIC_URL: url('the public HTTPS base URL Telegram calls for the webhook').optional(),
  // ingress: also create update.dispatch jobs for updates from chats outside ALLOWED_CHAT_IDS (never captures)
  DISPATCH_UNAUTHORIZED: z
    .enum(['true', 'false'], { message: 'expected true or false' })
    .transform((v) => v === 'true')
    .default('false'),

  // workers
  // the worker process's database connections; a handler that opens dispatch.transaction(ctx) holds one until its attempt's outcome is written
  DB_POOL_MAX: int("the worker process's database connections", 2, 1000).default('10'),
  // a worker without TELEGRAM_BOT_TOKEN: one registered bot's updates in flight at most, so a busy bot leaves slots to the others
  WORKER_BOT_CONCURRENCY: int("the number of one bot's concurrent updates per worker process", 1, 1000).default('4'),
  WORKER_CONCURRENCY: int('the number of concurrent jobs per worker process', 1, 1000).default(
    String(WORKER_CONCURRENCY_DEFAULT),
  ),
  STALE_AFTER: duration('how long a claimed job may stay without heartbeat before it is recovered', {
    min: STALE_AFTER_MIN_MS,
  }).default(String(STALE_AFTER_MS_DEFAULT)),
  RETRY_BASE: duration('the first retry delay', { min: RETRY_BASE_MIN_MS }).default(String(RETRY_BASE_MS_DEFAULT)),
  RETRY_CAP: duration('the longest retry delay', { min: RETRY_BASE_MIN_MS }).default(String(RETRY_CAP_MS_DEFAULT)),
  RETRY_MAX_ATTEMPTS: int('the attempt budget', 1, 1000).default(String(RETRY_MAX_ATTEMPTS_DEFAULT)),
  CAPTURE_TIMEOUT: duration('the collector request timeout', { min: REQUEST_TIMEOUT_MIN_MS }).default('10s'),
  // unset: 2s with DB_POOL_MODE=session (behind LISTEN), 500ms with DB_POOL_MODE=transaction
  WORK_POLL_INTERVAL: duration('how often an idle worker looks for new work', {
    min: WORK_POLL_INTERVAL_MIN_MS,
    max: WORK_POLL_INTERVAL_MAX_MS,
  }).optional(),
  SHUTDOWN_TIMEOUT: duration('how long shutdown waits for in-flight work').default(String(SHUTDOWN_TIMEOUT_MS_DEFAULT)),

  // update dispatch (docs/dispatch.md)
  HANDLER_TIMEOUT: duration('how long a bot handler may run before its attempt is abandoned and retried', {
    min: REQUEST_TIMEOUT_MIN_MS,
  }).default('20s'),
  // outbound: ctx.reply is enqueued with the handled mark (never twice, never for a failed handler)
  REPLY_MODE: z.enum(['direct', 'outbound']).default('outbound'),
  DISPATCH_ORDERING: z.enum(['chat', 'none']).default('chat'),
  // handler sessions (dispatch.sessionStore()) expire this long after their last write; retention deletes them
  SESSION_TTL: sessionTtl.default('30d'),

  // outbound relay (docs/outbound.md)
  OUTBOUND_RATE_MODE: z.enum(['proactive', 'reactive']).default('proactive'),
  OUTBOUND_RATE_PER_BOT: rate('the per-bot send rate (all workers together)').default('30/1s'),
  OUTBOUND_RATE_PER_CHAT: rate('the per-chat send rate').default('1/1s'),
  OUTBOUND_RATE_PER_GROUP: rate('the per-group send rate').default('20/1m'),
  OUTBOUND_SEND_TIMEOUT: duration('the sendMessage request timeout', { min: REQUEST_TIMEOUT_MIN_MS }).default('15s'),
  OUTBOUND_MAX_UPLOAD: int('the bytes one relayed Bot API call may upload', 1, OUTBOUND_MAX_UPLOAD_MAX).default(
    String(OUTBOUND_MAX_UPLOAD_DEFAULT),
  ),

  // sandbox
  SANDBOX_HOST: z.string().min(1).default('127.0.0.1'),
  SANDBOX_PORT: int('a TCP port', 0, 65535).default('8081'),
  SANDBOX_COLLECTOR_PORT: int('a TCP port', 0, 65535).default('8082'),

  // JetStream bridge, `tg-relay jetstream` (docs/jetstream.md); NATS_URL also enables it in `tg-relay start`
  NATS_URL: natsUrls.optional(),
  NATS_STREAM: z
    .string()
    .regex(/^[^\s.*>/\\]{1,255}$/, 'expected a stream name without spaces, ".", "*", ">", "/" or "\\"')
    .default('TELEGRAM_OUTBOUND'),
  NATS_SUBJECT: natsSubject('the subject publishers send TelegramOutbound JSON to').default('telegram.outbound'),
  NATS_ALERT_SUBJECT: natsSubject('the subject alerts about failed messages are published on').default(
    'telegram.alerts',
  ),
  NATS_CONSUMER: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,255}$/, 'expected a durable consumer name of A-Z, a-z, 0-9, _ and -')
    .default('tg-relay'),
  NATS_CREDS: z.string().min(1).optional(), // path to a .creds file (JWT + nkey seed)
  NATS_NKEY_SEED: z
    .string()
    .regex(/^SU[A-Z2-7]{54,}$/, 'expected an nkey user seed (starts with SU)')
    .optional(),
  NATS_ACK_WAIT: duration('how long NATS waits for an ack before redelivering').default('30s'),
  // below 100 ms a database outage turns into a redelivery loop against NATS and the database
  NATS_NAK_BACKOFF: duration(
    'the first redelivery delay after a database error (doubles per redelivery, up to 5 minutes)',
    { min: 100 },
  ).default('1s'),
  NATS_BATCH: int('how many fetched messages share one transaction', 1, 1000).default('100'),
  JETSTREAM_HEALTH_PORT: int('a TCP port (0 picks a free one)', 0, 65535).default('8091'),
  JETSTREAM_HEALTH_HOST: z.string().min(1).default('127.0.0.1'),
  // alerts about terminally failed messages: to OPS_CHAT_ID and on NATS_ALERT_SUBJECT; false switches both off
  META_ALERT_ON_DROP: z
    .enum(['true', 'false'], { message: 'expected true or false' })
    .transform((v) => v === 'true')
    .default('true'),
  // alerts about failed messages: at most one per window per (bot, operators' chat); below 1 s a
  // storm is one alert per failure again, above 1 h a summary comes too late to act on
  ALERT_COALESCE: duration('the alert coalescing window', {
    min: ALERT_COALESCE_MIN_MS,
    max: ALERT_COALESCE_MAX_MS,
  }).default(String(ALERT_COALESCE_MS_DEFAULT)),
  // at least Telegram's own shortest retry_after: 0 would retry every rate-limited message at once
  OUTBOUND_MAX_RETRY_AFTER: duration('the longest wait honoured for one 429 retry_after', { min: 1_000 }).default(
    '60s',
  ),
  // paid broadcasts (allow_paid_broadcast): the bulk rate Telegram granted this bot; 0 = off. Telegram
  // decides eligibility and the real ceiling (up to 1,000/s today), so this is only the operator's word.
  PAID_BROADCAST_RATE: int('the messages per second of paid broadcasts (0 = paid broadcasts off)', 0, 1000).default(
    '0',
  ),
  OUTBOUND_MAX_429: int(
    'how many 429 answers one message may take before it fails (0 = unlimited)',
    0,
    1_000_000,
  ).default('0'),
  // database session limits of every pool (libs/db/pool.ts); 0 leaves the server's own setting
  DB_STATEMENT_TIMEOUT: dbLimit('statement_timeout: the longest a statement may run', 1_000).default(
    String(DB_STATEMENT_TIMEOUT_MS_DEFAULT),
  ),
  DB_LOCK_TIMEOUT: dbLimit('lock_timeout: the longest a statement waits for a lock', 100).default(
    String(DB_LOCK_TIMEOUT_MS_DEFAULT),
  ),
  DB_IDLE_IN_TRANSACTION_TIMEOUT: dbLimit(
    'idle_in_transaction_session_timeout: how long the server keeps a session idle inside a transaction',
    1_000,
  ).default(String(DB_IDLE_IN_TRANSACTION_TIMEOUT_MS_DEFAULT)),
  // retention (docs/retention.md): finished work older than RETENTION, failed/resolved/audit rows older than RETENTION_FAILED are deleted
  RETENTION: retention('how long delivered/handled work is kept').default('14d'),
  RETENTION_FAILED: retention('how long failed work, resolved quarantine and audit rows are kept').default('90d'),
  PRUNE_EVERY: pruneEvery.default('10m'),
});

export type Config = z.output<typeof configSchema>;

/** Variables whose values are masked whenever the configuration is printed. */
export const SECRET_VARIABLES = [
  'TELEGRAM_BOT_TOKEN',
  'ADMIN_TOKEN',
  'ADMIN_TOKENS',
  'WEBHOOK_SECRET',
  'DATABASE_URL',
  'DATABASE_DIRECT_URL',
  'NATS_NKEY_SEED',
  'TOKEN_ENCRYPTION_KEY',
] as const;

/** The effective WORK_POLL_INTERVAL: the variable, or the default of the pool mode. */
export function workPollIntervalMs(c: Pick<Config, 'WORK_POLL_INTERVAL' | 'DB_POOL_MODE'>): number {
  if (c.WORK_POLL_INTERVAL !== undefined) return c.WORK_POLL_INTERVAL;
  return c.DB_POOL_MODE === 'transaction' ? WORK_POLL_INTERVAL_TRANSACTION_MS_DEFAULT : WORK_POLL_INTERVAL_MS_DEFAULT;
}

/** localhost, 127.0.0.0/8 or ::1: traffic that never leaves the machine. */
function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase();
  return h === 'localhost' || h === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * Rules between variables, checked once every variable is valid on its own. Each problem names
 * the variable to change and the one it is compared with.
 */
export function crossFieldProblems(c: Config): { variable: string; problem: string }[] {
  const out: { variable: string; problem: string }[] = [];
  if (c.CAPTURE_URL && !c.CAPTURE_ALLOW_INSECURE) {
    const u = new URL(c.CAPTURE_URL);
    if (u.protocol === 'http:' && !isLoopbackHost(u.hostname))
      out.push({
        variable: 'CAPTURE_URL',
        problem: `plain http to a host that is not loopback (${u.hostname}) sends every capture unencrypted: use https, or set CAPTURE_ALLOW_INSECURE=true to accept it`,
      });
  }
  if (c.RETRY_BASE > c.RETRY_CAP) {
    out.push({
      variable: 'RETRY_BASE',
      problem: `must not exceed RETRY_CAP (${formatMs(c.RETRY_CAP)}), got ${formatMs(c.RETRY_BASE)}`,
    });
  }
  if (c.INGRESS === 'webhook' && c.WEBHOOK_PORT !== 0 && c.WEBHOOK_PORT === c.ADMIN_PORT) {
    out.push({
      variable: 'WEBHOOK_PORT',
      problem: `must differ from ADMIN_PORT (${c.ADMIN_PORT}) when INGRESS=webhook`,
    });
  }
  if (c.SANDBOX_PORT !== 0 && c.SANDBOX_PORT === c.SANDBOX_COLLECTOR_PORT) {
    out.push({ variable: 'SANDBOX_COLLECTOR_PORT', problem: `must differ from SANDBOX_PORT (${c.SANDBOX_PORT})` });
  }
  if (c.METRICS_PORT !== undefined) {
    // the ports this process may also listen on; a clash would fail at startup with EADDRINUSE
    const others: [string, number, boolean][] = [
      ['ADMIN_PORT', c.ADMIN_PORT, true],
      ['WEBHOOK_PORT', c.WEBHOOK_PORT, c.INGRESS === 'webhook'],
      ['JETSTREAM_HEALTH_PORT', c.JETSTREAM_HEALTH_PORT, c.NATS_URL !== undefined],
      ['SANDBOX_PORT', c.SANDBOX_PORT, !c.TELEGRAM_BOT_TOKEN],
      ['SANDBOX_COLLECTOR_PORT', c.SANDBOX_COLLECTOR_PORT, !c.TELEGRAM_BOT_TOKEN],
    ];
    for (const [name, port, used] of others) {
      if (used && port === c.METRICS_PORT)
        out.push({ variable: 'METRICS_PORT', problem: `must differ from ${name} (${port}), got ${c.METRICS_PORT}` });
    }
  }
  return out;
}
