/**
 * Public types of the Telegram-faithful sandbox (Bot API fake + collector fake).
 * Telegram objects are modelled only as far as the relay and its tests need them.
 */

export type ChatType = 'private' | 'group' | 'supergroup' | 'channel';

export interface TgUser {
  id: number;
  is_bot: boolean;
  first_name: string;
  username?: string;
}

export interface TgChat {
  id: number;
  type: ChatType;
  first_name?: string;
  title?: string;
  username?: string;
}

export interface TgMessageEntity {
  type: string;
  offset: number;
  length: number;
}

export interface TgMessage {
  message_id: number;
  date: number;
  chat: TgChat;
  from?: TgUser;
  text?: string;
  entities?: TgMessageEntity[];
  reply_markup?: unknown;
  reply_to_message?: { message_id: number; date: number; chat: TgChat };
  edit_date?: number;
  caption?: string;
  /** Media messages: `photo` (PhotoSize[]), `document`, `video`, … as Telegram names them. */
  [field: string]: unknown;
}

export interface TgCallbackQuery {
  id: string;
  from: TgUser;
  message?: TgMessage;
  chat_instance: string;
  data?: string;
}

/** An update as the sandbox builds it. Raw injected items may be anything (see injectRawUpdate). */
export interface TgUpdate {
  update_id: number;
  message?: TgMessage;
  channel_post?: TgMessage;
  callback_query?: TgCallbackQuery;
  [key: string]: unknown;
}

export interface ResponseParameters {
  retry_after?: number;
  migrate_to_chat_id?: number;
}

/** The Bot API error envelope. */
export interface ErrorEnvelope {
  ok: false;
  error_code: number;
  description: string;
  parameters?: ResponseParameters;
}

export interface InjectMessageInput {
  chatId: number;
  text: string;
  fromId?: number;
  chatType?: ChatType;
  username?: string;
  firstName?: string;
}

export interface InjectMessagesInput {
  /** Explicit chat ids, or a number of private chats (ids chatBase, chatBase+1, …). */
  chats: number[] | number;
  /** First chat id when `chats` is a count (default 1001). */
  chatBase?: number;
  /** Message text is `${textPrefix}${i}` (default 'message '). */
  textPrefix?: string;
}

export interface InjectMessagesResult {
  count: number;
  first_update_id: number | null;
  last_update_id: number | null;
}

export interface InjectCallbackInput {
  chatId: number;
  data: string;
  fromId?: number;
  /** A message the bot sent in that chat; the callback carries it (or a stub when unknown). */
  messageId?: number;
}

/** One message the bot sent (or edited), in the order the sandbox accepted them. */
export interface SentMessage {
  seq: number;
  method: string;
  /** chat_id as the bot passed it (numeric strings normalised to numbers). */
  chat_id: number | string;
  /** The chat id the message landed in (channels addressed by @username get a numeric id). */
  resolved_chat_id: number;
  message_id: number;
  text: string;
  parse_mode?: string;
  reply_markup?: unknown;
  reply_to_message_id?: number;
  disable_notification?: boolean;
  /** Sent with allow_paid_broadcast. */
  paid?: boolean;
  /**
   * A media message: its kind (`photo`, `document`, `media_group` item kinds, `location`, …). Its
   * `text` is then what a chat list shows: `[photo]`, or `[photo] caption` with a caption.
   */
  media?: string;
  caption?: string;
  /** The file_id of an uploaded or referenced file (a photo's largest size). */
  file_id?: string;
  /** ms since epoch when the sandbox accepted it. */
  time: number;
}

/**
 * A file uploaded as a multipart/form-data part, as the call log keeps it: enough to compare an
 * upload byte for byte (`sha256`, and `data_base64` up to `maxRecordedFileBytes`).
 */
export interface CallFileRecord {
  /** The part name (the InputFile field, or the name an `attach://<name>` refers to). */
  part: string;
  filename: string;
  content_type?: string;
  size: number;
  /** Hex SHA-256 of the whole upload. */
  sha256: string;
  /** The bytes, base64, when size <= maxRecordedFileBytes; absent (and `truncated: true`) above. */
  data_base64?: string;
  truncated?: boolean;
}

export type CallOutcome =
  | 'ok'
  | 'error'
  | 'rate_limited'
  | 'server_error'
  | 'dropped_before'
  | 'dropped_after'
  | 'client_closed'
  /** A transport glitch was answered (fault kinds html_ok, html_error, truncated). */
  | 'glitch';

/** A record of one Bot API call. The token never appears: only the bot id. */
export interface CallRecord {
  seq: number;
  bot_id: number;
  method: string;
  params: Record<string, unknown>;
  /** ms since epoch when the request arrived. */
  time: number;
  duration_ms: number;
  outcome: CallOutcome;
  /** HTTP status answered (0 when the connection was dropped). */
  status: number;
  error_code?: number;
  description?: string;
  /** 'http' for normal calls, 'webhook_reply' for a method answered inside a webhook response. */
  via: 'http' | 'webhook_reply';
  /** multipart/form-data calls with file parts: one entry per part, in body order. */
  files?: CallFileRecord[];
}

/**
 * Besides the rate-driven kinds, `sequence` can force transport glitches a proxy produces:
 * `html_ok` (200 with an HTML page, nothing processed), `html_error` (`serverErrorStatus` with an
 * HTML page, nothing processed), `truncated` (processed, then a 200 whose JSON body is cut in half).
 */
export type FaultKind = 'server_error' | 'drop_before' | 'drop_after' | 'html_ok' | 'html_error' | 'truncated' | 'none';

/**
 * Fault injection. Rates are shares in [0, 1], decided per call with the seedable RNG, in this
 * order: drop_before, server_error, drop_after. `sequence` (consumed first, one entry per matching
 * call) makes a test deterministic without relying on the RNG.
 */
export interface FaultConfig {
  /** Share of calls answered with `serverErrorStatus` without being processed. */
  serverErrorRate?: number;
  /** 500 'Internal Server Error' or 502 'Bad Gateway' (default) or any 5xx. */
  serverErrorStatus?: number;
  /** Share of calls whose socket is destroyed before processing: nothing happens. */
  dropBeforeRate?: number;
  /** Share of calls processed (a send IS recorded) and then the socket is destroyed: ambiguous. */
  dropAfterRate?: number;
  /** Added latency before processing, ms. */
  latencyMs?: number;
  /** Restrict the faults (and latency) to these methods (case-insensitive). Default: all methods. */
  methods?: string[];
  /** Forced outcomes for the next matching calls, consumed in order. */
  sequence?: FaultKind[];
}

export interface BucketLimit {
  /** Messages allowed per window. */
  count: number;
  windowMs: number;
  /** Back-to-back sends tolerated (bucket depth). Default: `count` (so "count per window" clients pass). */
  burst?: number;
}

export interface RateLimitConfig {
  enabled: boolean;
  perBot: BucketLimit;
  /** chat_id > 0 */
  privateChat: BucketLimit;
  /** chat_id < 0 or @channel */
  groupChat: BucketLimit;
  /**
   * Paid broadcasts: a send with `allow_paid_broadcast: true` is paced by this bucket instead of
   * `perBot` (Telegram lets such sends exceed the free rate, for a fee); per-chat limits still apply.
   * Absent (the default): the flag changes nothing, as for a bot Telegram has not enabled.
   */
  paidBroadcast?: BucketLimit;
  /** Arrival jitter tolerated on every bucket, ms (network and timer jitter of a well-paced client). */
  toleranceMs: number;
}

export type ScriptedChatError =
  | { kind: 'chat_not_found'; times?: number }
  | { kind: 'blocked'; times?: number }
  | { kind: 'deactivated'; times?: number }
  | { kind: 'migrated'; migrateToChatId: number; times?: number }
  | { kind: 'custom'; error_code: number; description: string; parameters?: ResponseParameters; times?: number };

export interface WebhookRetryConfig {
  /** First retry delay, doubled on each failure of the same update. Default 1000 ms. */
  baseMs: number;
  /** Upper bound of the retry delay. Default 60000 ms. */
  capMs: number;
  /** How long a webhook response is awaited. Default 60000 ms. */
  timeoutMs: number;
}

export interface WebhookInfo {
  url: string;
  has_custom_certificate: boolean;
  pending_update_count: number;
  max_connections?: number;
  allowed_updates?: string[];
  last_error_date?: number;
  last_error_message?: string;
}

export interface SandboxStats {
  calls: number;
  by_method: Record<string, number>;
  /** 429 answers. */
  rate_limited: number;
  faults: { server_error: number; drop_before: number; drop_after: number };
  webhook: { delivered: number; failed: number };
}

export interface BotStateSummary {
  bot_id: number;
  username: string;
  pending_count: number;
  confirmed_offset: number | null;
  next_update_id: number;
  webhook: WebhookInfo | null;
  sent_count: number;
  revoked: boolean;
  /** A getUpdates of this bot is being held open (long poll) right now. */
  long_poll_open: boolean;
}
