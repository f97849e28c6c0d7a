/**
 * The admin API's responses as the dashboard reads them. Shared by the browser code (src/, its own
 * tsconfig with DOM types) and the Node side, so it imports nothing but the light schema module and
 * the dependency-free work-type registry.
 * List and detail rows come from the route schemas themselves; the stats and time-series shapes
 * are written out here (their server modules pull in the database layer) and
 * test/unit/admin-ui/api-types.test.ts makes `npm run typecheck` fail if they drift apart.
 */
import type { Static } from '@sinclair/typebox';
import type {
  Attempt,
  AuditEntryBody,
  CaptureDetail as CaptureDetailSchema,
  CaptureSummary,
  InboxDetail as InboxDetailSchema,
  InboxSummary,
  OutboundDetail as OutboundDetailSchema,
  OutboundSummary,
  QuarantineDetail as QuarantineDetailSchema,
  QuarantineSummary,
} from '../schemas';
import type { WorkTypeName } from '../../queue/work-types';

export type ItemKind = WorkTypeName;
export type ListKind = ItemKind | 'quarantine';

export type AttemptRow = Static<typeof Attempt>;
export type AuditRow = Static<typeof AuditEntryBody>;

export interface Summaries {
  captures: Static<typeof CaptureSummary>;
  outbound: Static<typeof OutboundSummary>;
  inbox: Static<typeof InboxSummary>;
  quarantine: Static<typeof QuarantineSummary>;
}

type WithHistory<T> = Omit<T, 'history'> & { history: AttemptRow[] };
export interface Details {
  captures: WithHistory<Static<typeof CaptureDetailSchema>>;
  outbound: WithHistory<Static<typeof OutboundDetailSchema>>;
  inbox: WithHistory<Static<typeof InboxDetailSchema>>;
  quarantine: WithHistory<Static<typeof QuarantineDetailSchema>>;
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/** GET /v1/stats (libs/admin/stats.ts). */
export interface StateCount {
  count: number;
  approximate: boolean;
}

export interface KindStats {
  queue: string | null;
  states: Record<string, StateCount>;
  total: StateCount;
  oldest_pending_at: string | null;
  oldest_pending_age_seconds: number | null;
  attempts_last_minute: number;
  delivered_last_minute: number;
  failed_last_minute: number;
  delivery_rate_per_second: number;
}

export interface BotStats {
  bot_id: string;
  next_offset: number;
  lease_owner: string | null;
  lease_generation: number;
  lease_expires_at: string | null;
  lease_valid: boolean;
  progress_generation: number | null;
  progress_at: string | null;
  progress_age_seconds: number | null;
  halted_reason: string | null;
  halted_at: string | null;
  pending_update_count: number | null;
  pending_update_count_at: string | null;
  ready: boolean | null;
  reasons: string[];
}

export interface Stats {
  generated_at: string;
  exact_count_cap: number;
  kinds: Record<string, KindStats>;
  quarantine: { states: Record<string, StateCount> };
  /** Chats the bot cannot reach, per status. */
  chat_status: Record<string, number>;
  bots: BotStats[];
}

/** GET /v1/stats/timeseries (libs/admin/routes/timeseries.ts). */
export interface AttemptBucket {
  /** Start of the bucket (ISO). */
  at: string;
  attempts: number;
  /** Attempts that delivered (captures, outbound) or handled (inbox). */
  delivered: number;
  /** Attempts that ended the item as failed (terminal error or budget spent). */
  failed: number;
}

export interface AttemptTimeseries {
  generated_at: string;
  from: string;
  bucket_seconds: number;
  kinds: Record<ItemKind, AttemptBucket[]>;
}

/** POST /v1/{kind}/retry. */
export interface BulkRetryResult {
  kind: string;
  dry_run: boolean;
  matched: number;
  retried: number;
  more: boolean;
  ids: number[];
  audit_id: number;
}

/** POST /v1/{kind}/:id/{retry,cancel,release,discard}. */
export interface ActionResult {
  id: number;
  state: string;
  audit_id: number;
  [k: string]: unknown;
}

/** GET /v1/sandbox (sandbox mode only). */
export interface SandboxInfo {
  enabled: boolean;
  bot_id: string;
  chat_id: number;
}

/** GET /v1/broadcasts/:id: what the broadcast will take and cost, stated when it was created. */
export interface BroadcastPlan {
  recipients: number;
  skipped: number;
  messages: number;
  paid: boolean;
  rate_per_second: number;
  estimated_seconds: number;
  paid_messages: number;
  cost_stars: number;
}

export type BroadcastState = 'pending' | 'running' | 'paused' | 'cancelled' | 'completed';

/** GET /v1/broadcasts/:id and the items of GET /v1/broadcasts; POST …/pause|resume|cancel (with moved, audit_id). */
export interface BroadcastStatus {
  id: string;
  bot_id: string;
  key: string | null;
  state: BroadcastState;
  method: string;
  audience: Record<string, unknown>;
  recipients: number;
  counts: {
    pending: number;
    paused: number;
    delivering: number;
    delivered: number;
    failed: number;
    cancelled: number;
    skipped: number;
    blocked: number;
  };
  rate: number;
  eta_seconds: number | null;
  plan: BroadcastPlan;
  paid: boolean;
  created_at: string;
}

/**
 * GET /v1/bots/:id, the items of GET /v1/bots, and the answers of POST /v1/bots, …/enable,
 * …/disable: a registered bot (relay.bots), never its token.
 */
export interface Bot {
  id: string;
  username: string | null;
  handlers: string | null;
  capture_url: string | null;
  /** Empty: every chat is allowed. */
  allowed_chat_ids: string[];
  ops_chat_id: string | null;
  enabled: boolean;
  settings: Record<string, string>;
  token_key_id: string;
  version: number;
  created_at: string;
  updated_at: string;
}
