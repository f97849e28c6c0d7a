import { Type, TSchema } from '@sinclair/typebox';
import { RELAYED_METHODS, type RelayedMethod } from '../telegram/methods';

/**
 * Request and response schemas (TypeBox → JSON Schema). Request schemas reject unknown fields
 * (additionalProperties: false) so a mistyped filter is a 400, never a silently wider bulk action.
 */
const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const Int = Type.Integer();
const Time = Type.String({ format: 'date-time' });
const NTime = Nullable(Time);
const NInt = Nullable(Int);
const NStr = Nullable(Type.String());

export const ErrorBody = Type.Object(
  {
    code: Type.String({ description: 'stable error code, e.g. RELAY_ADMIN_VALIDATION' }),
    message: Type.String(),
    field: Type.Optional(
      Type.String({ description: 'the field at fault, as location.path (querystring.limit, body.chat_id)' }),
    ),
  },
  { $id: 'Error', additionalProperties: true, description: 'Every error: a stable code and a message' },
);
const ErrorRef = Type.Ref('Error');
export const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [s, ErrorRef]));

/**
 * Shared numeric parameter schemas. Row ids and Telegram ids (chat ids have at most 52
 * significant bits, update ids fewer) are bigint in PostgreSQL and numbers in JSON: bounding them
 * by Number.MAX_SAFE_INTEGER keeps every accepted value exact in JavaScript and within bigint, so
 * an out-of-range id is a 400 here rather than a PostgreSQL overflow (22003) later.
 */
export const MAX_ID = Number.MAX_SAFE_INTEGER;
export const RowId = (description = 'row id') => Type.Integer({ minimum: 1, maximum: MAX_ID, description });
export const TelegramId = (description: string, minimum = -MAX_ID) =>
  Type.Integer({ minimum, maximum: MAX_ID, description });
export const IdParams = Type.Object({ id: RowId() }, { additionalProperties: false });

/** A chat id as a decimal string: 16 digits hold every 52-bit Telegram id and stay within bigint. */
export const CHAT_ID_PATTERN = '-?[0-9]{1,16}';
export const CHANNEL_PATTERN = '@[A-Za-z0-9_]{4,64}';
/** Chat filter for tables whose chat columns are bigint (inbox, captures): numeric ids only. */
export const NumericChatFilter = Type.String({ pattern: `^${CHAT_ID_PATTERN}$`, description: 'chat id' });
/** Chat filter for outbound (text chat columns): a chat id or an @channel username. */
export const ChatFilter = Type.String({
  pattern: `^(${CHAT_ID_PATTERN}|${CHANNEL_PATTERN})$`,
  description: 'chat id (or @channel for outbound)',
});
export const chatFilterFor = (kind: string) => (kind === 'outbound' ? ChatFilter : NumericChatFilter);
export const BotIdFilter = Type.String({
  pattern: '^[0-9]{1,16}$',
  description: 'bot id (the numeric prefix of its token)',
});
/** The query string of a route whose only filter is the bot (stats, timeseries). */
export const BotFilterQuery = Type.Object(
  {
    bot_id: Type.Optional(
      Type.String({ pattern: BotIdFilter.pattern, description: "only this bot's rows (default: every bot's)" }),
    ),
  },
  { additionalProperties: false },
);
export const ErrorText = Type.String({
  minLength: 1,
  maxLength: 200,
  description: 'substring of the last error / failure reason (case-insensitive)',
});
/** Outbound rows by the Bot API method they are sent with (every row has one; old rows are sendMessage). */
export const MethodFilter = Type.Unsafe<RelayedMethod>({
  type: 'string',
  enum: [...RELAYED_METHODS],
  description: 'outbound: the Bot API method (sendMessage, sendPhoto, editMessageText, answerCallbackQuery…)',
});
export const Limit = Type.Integer({ minimum: 1, maximum: 500, default: 50 });

export function listQuery(
  states: readonly string[],
  opts: { chat: boolean; updateId: boolean; chatSchema?: TSchema; method?: boolean },
) {
  return Type.Object(
    {
      state: Type.Optional(Type.Union(states.map((s) => Type.Literal(s)))),
      ...(opts.chat ? { chat: Type.Optional(opts.chatSchema ?? ChatFilter) } : {}),
      ...(opts.updateId ? { update_id: Type.Optional(TelegramId('update id', 0)) } : {}),
      ...(opts.method ? { method: Type.Optional(MethodFilter) } : {}),
      bot_id: Type.Optional(BotIdFilter),
      since: Type.Optional(Type.String({ format: 'date-time', description: 'time >= since (ISO 8601)' })),
      until: Type.Optional(Type.String({ format: 'date-time', description: 'time < until (ISO 8601)' })),
      error: Type.Optional(ErrorText),
      limit: Type.Optional(Limit),
      cursor: Type.Optional(Type.String({ maxLength: 200, description: 'next_cursor of the previous page' })),
    },
    { additionalProperties: false },
  );
}

export const Attempt = Type.Object(
  {
    id: Int,
    subject: Type.String(),
    attempt: NInt,
    worker_id: NStr,
    started_at: Time,
    finished_at: NTime,
    duration_ms: NInt,
    outcome: Type.String(),
    http_status: NInt,
    error_code: NStr,
    error: NStr,
    details: Nullable(Type.Any()),
    actor: NStr,
  },
  { $id: 'Attempt' },
);

const work = {
  id: Int,
  bot_id: Type.String(),
  state: Type.String(),
  attempts: Int,
  next_attempt_at: Time,
  worker_id: NStr,
  started_at: NTime,
  last_error: NStr,
  updated_at: Time,
};

const captureSummary = {
  ...work,
  capture_key: Type.String(),
  update_id: Int,
  chat_id: Int,
  message_id: Int,
  max_attempts: NInt,
  last_status: NInt,
  failed_reason: NStr,
  created_at: Time,
  delivered_at: NTime,
};
export const CaptureSummary = Type.Object(captureSummary, { $id: 'CaptureSummary' });
export const CaptureDetail = Type.Object(
  {
    ...captureSummary,
    from_id: NInt,
    message_date: NTime,
    payload: Type.Any(),
    payload_sha256: Type.String(),
    job_id: NStr,
    claim_id: NStr,
    trace_id: Nullable(
      Type.String({ description: 'OpenTelemetry trace id of the item (null: stored without tracing)' }),
    ),
    trace_url: Nullable(
      Type.String({
        description:
          'the trace in the trace viewer: TRACE_URL_TEMPLATE with {trace_id} filled in (null: unset or no trace)',
      }),
    ),
    history: Type.Array(Type.Ref('Attempt')),
  },
  { $id: 'CaptureDetail' },
);

const outboundSummary = {
  ...work,
  msg_id: Type.String(),
  /** Null only for answers to queries (answerCallbackQuery…): they belong to no chat. */
  chat_id: NStr,
  target_chat_id: NStr,
  kind: Type.String(),
  delivery: Type.String(),
  /** interactive or bulk (sql/0027_outbound_lanes.sql). */
  lane: Type.String(),
  max_attempts: NInt,
  last_status: NInt,
  failed_reason: NStr,
  telegram_message_id: NInt,
  source_update_id: NInt,
  created_at: Time,
  delivered_at: NTime,
  /** The JetStream publisher's free-form `kind` (info, alert, trade…); null for other ways in. */
  publisher_kind: NStr,
  /** The Bot API method the row is sent with (sendMessage for every row written before relayed methods). */
  method: Type.String(),
};
export const OutboundSummary = Type.Object(outboundSummary, { $id: 'OutboundSummary' });
export const OutboundDetail = Type.Object(
  {
    ...outboundSummary,
    text: Nullable(Type.String({ description: 'sendMessage only; other methods carry their content in params' })),
    parse_mode: NStr,
    disable_notification: Type.Boolean(),
    reply_markup: Nullable(Type.Any()),
    payload_sha256: Type.String(),
    job_id: NStr,
    claim_id: NStr,
    trace_id: Nullable(
      Type.String({ description: 'OpenTelemetry trace id of the item (null: stored without tracing)' }),
    ),
    trace_url: Nullable(
      Type.String({
        description:
          'the trace in the trace viewer: TRACE_URL_TEMPLATE with {trace_id} filled in (null: unset or no trace)',
      }),
    ),
    params: Nullable(
      Type.Any({
        description:
          'methods other than sendMessage: every parameter but chat_id; an uploaded file is "attach://<part>" (see uploads)',
      }),
    ),
    message_count: Type.Integer({ description: 'messages the row counts for against the rate limits (answers: 0)' }),
    telegram_message_ids: Nullable(
      Type.Array(Int, { description: "Telegram's message ids once delivered, in order (an album: one per message)" }),
    ),
    uploads: Type.Array(Type.Object({ part: Type.String(), size_bytes: Int }), {
      description: 'the files stored with the row, by multipart part name and size (never their bytes)',
    }),
    history: Type.Array(Type.Ref('Attempt')),
  },
  { $id: 'OutboundDetail' },
);

const inboxSummary = {
  ...work,
  update_id: Int,
  update_type: Type.String(),
  chat_id: NInt,
  authorized: Type.Boolean(),
  generation: NInt,
  received_at: Time,
  handled_at: NTime,
};
export const InboxSummary = Type.Object(inboxSummary, { $id: 'InboxSummary' });
export const InboxDetail = Type.Object(
  {
    ...inboxSummary,
    payload: Type.Any(),
    job_id: NStr,
    claim_id: NStr,
    trace_id: Nullable(
      Type.String({ description: 'OpenTelemetry trace id of the item (null: stored without tracing)' }),
    ),
    trace_url: Nullable(
      Type.String({
        description:
          'the trace in the trace viewer: TRACE_URL_TEMPLATE with {trace_id} filled in (null: unset or no trace)',
      }),
    ),
    history: Type.Array(Type.Ref('Attempt')),
  },
  { $id: 'InboxDetail' },
);

const quarantineSummary = {
  id: Int,
  bot_id: Type.String(),
  update_id: NInt,
  sha256: Type.String(),
  error: Type.String(),
  json_path: NStr,
  state: Type.String(),
  generation: NInt,
  size_bytes: Int,
  transport: Nullable(
    Type.String({
      description: 'polling or webhook: how the item arrived (null for rows stored before migration 0007)',
    }),
  ),
  created_at: Time,
  resolved_at: NTime,
};
export const QuarantineSummary = Type.Object(quarantineSummary, { $id: 'QuarantineSummary' });
export const QuarantineDetail = Type.Object(
  {
    ...quarantineSummary,
    raw_base64: Type.String({ description: 'the bytes as received' }),
    history: Type.Array(Type.Ref('Attempt')),
  },
  { $id: 'QuarantineDetail' },
);

export const pageOf = (ref: string) => Type.Object({ items: Type.Array(Type.Ref(ref)), next_cursor: NStr });

const StateCount = Type.Object({ count: Int, approximate: Type.Boolean() }, { $id: 'StateCount' });
const KindStats = Type.Object(
  {
    queue: NStr,
    states: Type.Record(Type.String(), Type.Ref('StateCount')),
    total: Type.Ref('StateCount'),
    oldest_pending_at: NTime,
    oldest_pending_age_seconds: Nullable(Type.Number()),
    attempts_last_minute: Int,
    delivered_last_minute: Int,
    failed_last_minute: Int,
    delivery_rate_per_second: Type.Number(),
  },
  { $id: 'KindStats' },
);
const BotStats = Type.Object(
  {
    bot_id: Type.String(),
    next_offset: Int,
    lease_owner: NStr,
    lease_generation: Int,
    lease_expires_at: NTime,
    lease_valid: Type.Boolean(),
    progress_generation: NInt,
    progress_at: NTime,
    progress_age_seconds: Nullable(Type.Number()),
    halted_reason: NStr,
    halted_at: NTime,
    pending_update_count: NInt,
    pending_update_count_at: NTime,
    ready: Nullable(Type.Boolean()),
    reasons: Type.Array(Type.String()),
  },
  { $id: 'BotStats' },
);
export const StatsBody = Type.Object({
  generated_at: Time,
  exact_count_cap: Int,
  kinds: Type.Record(Type.String(), Type.Ref('KindStats')),
  quarantine: Type.Object({ states: Type.Record(Type.String(), Type.Ref('StateCount')) }),
  chat_status: Type.Record(Type.String(), Int, {
    description: 'chats the bot cannot reach (GET /v1/chats/status), per status',
  }),
  bots: Type.Array(Type.Ref('BotStats')),
});

export const ReadinessBody = Type.Object({
  ready: Type.Boolean(),
  reasons: Type.Array(Type.String()),
  checks: Type.Any(),
  code: Type.Optional(Type.String()),
});

export const AuditEntryBody = Type.Object(
  {
    id: Int,
    action: Type.String(),
    actor: NStr,
    worker_id: NStr,
    subject_id: NInt,
    subject_key: NStr,
    bot_id: Nullable(
      Type.String({
        description:
          "the bot the action concerns (its subject's); null for actions across bots (recover_stale, a bulk retry without bot_id) and refusals that name no existing row",
      }),
    ),
    started_at: Time,
    duration_ms: NInt,
    error_code: NStr,
    error: NStr,
    details: Nullable(Type.Any()),
  },
  { $id: 'AuditEntry' },
);

/** Shared schemas registered once with app.addSchema (referenced by $id). */
export const SHARED_SCHEMAS = [
  ErrorBody,
  Attempt,
  CaptureSummary,
  CaptureDetail,
  OutboundSummary,
  OutboundDetail,
  InboxSummary,
  InboxDetail,
  QuarantineSummary,
  QuarantineDetail,
  StateCount,
  KindStats,
  BotStats,
  AuditEntryBody,
];
