/**
 * Every stable error code tg-relay throws, stores (relay.attempts.error_code, last_error) or answers
 * with (admin API `code`), in one place — as fastify's lib/errors.js. Codes are an API: callers,
 * dashboards and audit queries branch on them, so a code is never renamed or reused. `http` is the
 * status the admin API answers with, where the code is an HTTP answer. test/unit/errors.test.ts
 * checks that every RELAY_* code named in libs/ and apps/ is listed here.
 */
export const RELAY_CODES = {
  // configuration and start-up
  RELAY_CONFIG_INVALID: { meaning: 'a configuration variable is missing or out of its allowed range' },
  RELAY_MIGRATION_FAILED: { meaning: 'a SQL migration or repeatable SQL file failed to apply' },
  RELAY_BOSS_SCHEMA_MISMATCH: {
    meaning: "the job ledger's schema version is not the one this build expects (exit 65)",
  },
  RELAY_EMBEDDED_POSTGRES: { meaning: 'the embedded PostgreSQL could not be started or joined' },
  RELAY_QUEUE_NOT_MIGRATED: { meaning: 'a worker started on a database with pending migrations' },
  RELAY_DB_POOL_MODE: {
    meaning:
      'DB_POOL_MODE does not fit the connection (session mode behind a transaction pooler), or migrations behind one lack DATABASE_DIRECT_URL (exit 78)',
  },
  // the engine (libs/queue)
  RELAY_QUEUE_STOPPED: { meaning: 'an attempt was aborted because its worker is stopping' },
  RELAY_HANDLER_THREW: { meaning: "a job kind's attempt threw instead of returning an outcome (retried)" },
  RELAY_CLAIM_LOST: { meaning: 'the claim was recovered or settled elsewhere before the attempt finished' },
  RELAY_STALE_CLAIM: { meaning: 'a claim whose worker stopped heartbeating was recovered' },
  RELAY_RELEASED: { meaning: 'an unfinished claim was given back at worker shutdown (not counted)' },
  RELAY_OUTCOME_UNWRITABLE: {
    meaning: "an attempt's outcome could not be stored as given and was stored safely instead",
  },
  RELAY_ENQUEUE_FAILED: {
    meaning: 'the job ledger did not create every job (its queue is missing: run tg-relay migrate)',
  },
  // ingress
  RELAY_LEASE_LOST: { meaning: "the ingress lease was lost: the batch's writes were fenced and rolled back" },
  RELAY_NOT_LEASE_OWNER: { meaning: 'this replica does not hold the ingress lease of the bot' },
  RELAY_CAPTURE_KEY_CONFLICT: {
    meaning:
      'a capture key arrived again with different data: the stored capture is kept; ingress keeps that update in relay.quarantine, an admin release is refused',
  },
  RELAY_QUARANTINE_UNDECODABLE: { meaning: 'a quarantined update still does not decode as a Telegram update' },
  // outbound
  RELAY_OUTBOUND_INVALID: { meaning: 'an outbound message failed validation (SQLSTATE TR422)', http: 400 },
  RELAY_OUTBOUND_CONFLICT: {
    meaning: 'an outbound msg_id is taken by a different payload (SQLSTATE TR409)',
    http: 409,
  },
  RELAY_ABORTED: { meaning: 'a send was stopped before it went out; not sent, retried uncounted' },
  RELAY_RATE_DEFERRED: { meaning: "a send waited for the bot's or chat's rate limit (not counted)" },
  RELAY_TOO_MANY_429: { meaning: 'Telegram answered 429 too often in a row for one message' },
  RELAY_SEND_THREW: { meaning: 'sending threw before Telegram answered (retried)' },
  RELAY_QUERY_EXPIRED: {
    meaning:
      'Telegram no longer takes an answer to the query ("query is too old", "query ID is invalid"); recorded, not alerted',
  },
  RELAY_DEPENDENCY_FAILED: {
    meaning: 'the message names a placeholder id of an earlier message that failed: not sent',
  },
  RELAY_DEPENDENCY_PENDING: {
    meaning: 'the message names a placeholder id of an earlier message not delivered yet (retried, not counted)',
  },
  RELAY_UNKNOWN_PLACEHOLDER: { meaning: 'the message names a placeholder id no message of the bot handed out' },
  // Telegram
  RELAY_TELEGRAM_API_ERROR: { meaning: 'the Bot API answered ok: false or an HTTP error status' },
  RELAY_TELEGRAM_NETWORK_ERROR: { meaning: 'a Bot API request produced no answer (network, timeout)' },
  // dispatch
  RELAY_HANDLER_TIMEOUT: { meaning: 'a bot handler did not finish within HANDLER_TIMEOUT' },
  RELAY_DISPATCH_ABORTED: { meaning: 'a dispatch attempt was aborted (shutdown or claim lost)' },
  RELAY_DISPATCH_CLOSED: { meaning: 'a handler called the Bot API after its dispatch attempt was over' },
  RELAY_SESSION_CONFLICT: {
    meaning:
      'another attempt wrote a session after this attempt read it: the attempt rolled back and runs again (not counted)',
  },
  RELAY_SESSION_VALUE_INVALID: {
    meaning: 'a session value is not JSON (a function, a cycle, a BigInt, NUL): the attempt failed',
  },
  RELAY_DISPATCH_NO_DATABASE: {
    meaning: 'a session or handler transaction was used where there is no worker database',
  },
  RELAY_DISPATCH_NO_ATTEMPT: { meaning: 'dispatch.transaction(ctx) was called outside a dispatch attempt' },
  RELAY_DISPATCH_BAD_PAYLOAD: { meaning: 'a stored inbox payload is not a Telegram update' },
  RELAY_CATCH_ALL_ERROR_HANDLER: { meaning: 'a catch-all error handler was registered (refused)' },
  RELAY_REPLY_SINK_UNAVAILABLE: { meaning: 'a reply was made where no reply sink exists' },
  RELAY_INVALID_REPLY: { meaning: 'a handler reply was refused before it was queued' },
  RELAY_TELEGRAF_REFUSED: { meaning: 'the Telegraf adapter refused a call it cannot relay' },
  // admin API
  RELAY_ADMIN_INSECURE_BINDING: { meaning: 'the admin API refused to listen on a public address without a token' },
  // broadcasts (libs/broadcasts)
  RELAY_BROADCAST_INVALID: {
    meaning: 'a broadcast request failed validation (message, audience or options)',
    http: 400,
  },
  RELAY_BROADCAST_NOT_FOUND: { meaning: 'no broadcast has this id', http: 404 },
  RELAY_BROADCAST_STATE: { meaning: 'pause, resume or cancel of a broadcast whose state does not allow it', http: 409 },
  RELAY_BROADCAST_KEY_CONFLICT: {
    meaning: 'a broadcast idempotency key is taken by a broadcast created with another request',
    http: 409,
  },
  // the bot registry (libs/bots)
  RELAY_TOKEN_KEY: {
    meaning: 'TOKEN_ENCRYPTION_KEY is missing or malformed, or a registered bot token does not decrypt with it',
    http: 503,
  },
  RELAY_BOT_INVALID: { meaning: 'a bot registration failed validation (token, chat ids, URLs, settings)', http: 400 },
  RELAY_BOT_TOKEN_REJECTED: { meaning: "Telegram's getMe refused the token of a bot being registered", http: 422 },
  RELAY_BOT_NOT_FOUND: { meaning: 'no registered bot has this id', http: 404 },
  RELAY_BOT_API_UNREACHABLE: {
    meaning: "the Bot API did not answer the getMe that checks a bot's token: nothing was registered",
    http: 503,
  },
  RELAY_BOT_NOT_SERVED: {
    meaning: 'a fleet worker claimed work of a bot disabled or removed since: it waits for the bot (retried)',
  },
  RELAY_BOT_HANDLERS: {
    meaning: "a registered bot's handlers module failed to load or its getMe failed: its updates are retried",
  },
  RELAY_ADMIN_UNAUTHORIZED: { meaning: 'missing or wrong admin bearer token', http: 401 },
  RELAY_ADMIN_VALIDATION: { meaning: 'a request field failed its schema', http: 400 },
  RELAY_ADMIN_BAD_REQUEST: {
    meaning: 'a malformed request (bad JSON, content type, out-of-range parameter)',
    http: 400,
  },
  RELAY_ADMIN_BAD_CURSOR: { meaning: 'a pagination cursor is malformed', http: 400 },
  RELAY_ADMIN_TRACEPARENT_INVALID: {
    meaning: 'a traceparent header or field is not W3C trace context (00-<32 hex>-<16 hex>-<2 hex>)',
    http: 400,
  },
  RELAY_ADMIN_NOT_FOUND: { meaning: 'the addressed row does not exist', http: 404 },
  RELAY_ADMIN_ROUTE_NOT_FOUND: { meaning: 'no such route', http: 404 },
  RELAY_ADMIN_NOT_FAILED: { meaning: 'retry of a row that is not failed', http: 409 },
  RELAY_ADMIN_NOT_PENDING: { meaning: 'cancel of a row that is not pending', http: 409 },
  RELAY_ADMIN_NOT_QUARANTINED: { meaning: 'release of an update that is not in quarantine', http: 409 },
  RELAY_ADMIN_RELEASE_FAILED: { meaning: 'a quarantined update could not be released', http: 409 },
  RELAY_ADMIN_PAYLOAD_TOO_LARGE: { meaning: 'the request body is too large', http: 413 },
  RELAY_ADMIN_NOT_READY: { meaning: 'readiness: the process is not ready (see the body)', http: 503 },
  RELAY_ADMIN_UNAVAILABLE: { meaning: 'the database is not reachable', http: 503 },
  RELAY_ADMIN_INTERNAL: { meaning: 'an unexpected error (see the admin log)', http: 500 },
} as const satisfies Record<string, { meaning: string; http?: number }>;

export type RelayCode = keyof typeof RELAY_CODES;
