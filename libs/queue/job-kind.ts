import type { Logger } from '../observability/logger';
import type { Queryable } from '../db/pool';
import type { QueueName } from '../db/boss';
import type { Outcome } from './outcome';
import type { AttemptRow } from './queries';

import type { WorkSubject } from './work-types';

/** `relay.attempts.subject` values written by workers (the work-type registry's subjects). */
export type AttemptSubject = WorkSubject;

/** One job this worker holds: its domain row is `delivering` under `claimId`. */
export interface ClaimedJob<Row = Record<string, unknown>> {
  /** Domain row id (bigint, as text). */
  id: string;
  /** Business key: capture_key, msg_id… (audit `subject_key`). */
  key: string;
  /** The bot the row belongs to (its bot_id), when the store reads it: metrics label the attempt with it. */
  botId?: string;
  /** ledger job mirroring the row (null only for rows enqueued without one). */
  jobId: string | null;
  /** Fencing token of this claim: every outcome write checks it. */
  claimId: string;
  /** 1-based number of this attempt. */
  attempt: number;
  /** The row's own budget, or null for the worker's RETRY_MAX_ATTEMPTS. */
  maxAttempts: number | null;
  /** The whole domain row as claimed. */
  row: Row;
}

/** A claim by row id (primary-key lookup) and fencing token. */
export interface ClaimRef {
  id: string;
  claimId: string;
}

/** The state a settled row moves to. */
export type SettledState = 'delivered' | 'pending' | 'failed';

export interface Settlement<Effects = unknown> {
  id: string;
  claimId: string;
  state: SettledState;
  /** For `pending`: when it is due again, as a delay from `now`. */
  delayMs?: number;
  status?: number;
  error?: string;
  failedReason?: string;
  /** For `pending`: the attempt is given back (attempts - 1), as for a rate limit. */
  uncounted?: boolean;
  /** The outcome's kind-specific `effects`, for the kind's effects step to apply (see AttemptInfo). */
  effects?: Effects;
  /** Set by the engine for a store that `mirrorsInSettle`: what the settle statement writes beside the row. */
  mirror?: SettleMirror;
}

/** The ledger job's move and the audit row of one outcome, written by the settle statement itself. */
export interface SettleMirror {
  queue: QueueName;
  /** The ledger job's output if the item fails. */
  failOutput: Record<string, unknown>;
  /** The audit row if the claim still holds (the statement adds `details.nextAttemptAt` for a retry)… */
  landed: AttemptRow;
  /** …and if it was lost (fenced). */
  fenced: AttemptRow;
}

export interface SettledRow {
  id: string;
  claimId: string;
  jobId: string | null;
  state: SettledState;
  nextAttemptAt: Date | null;
}

export interface RecoveredRow {
  id: string;
  key: string;
  jobId: string | null;
  state: 'pending' | 'failed';
  attempt: number;
  /** The worker that held the claim, and when its attempt started. */
  workerId: string | null;
  startedAt: Date | null;
  heartbeatAt: Date | null;
  nextAttemptAt: Date | null;
  /** The audit row's `outcome` instead of `retry`/`failed` (outbound: `ambiguous`, see send-kind.ts). */
  label?: string;
}

/**
 * How a job kind keeps its domain rows. Every method runs on the caller's transaction client, so the
 * engine can move the ledger job in the same transaction. `now` is null for the database clock.
 */
export interface HeartbeatResult {
  renewed: string[];
  held: string[];
}

export interface ClaimStore<Row = Record<string, unknown>, Effects = unknown> {
  readonly subject: AttemptSubject;
  /**
   * For a store shared between bots (a fleet's, see fair-claims.ts): the bots it serves now. Metrics
   * drop the series of a bot that left it; without it, every bot whose rows it claimed stays served.
   */
  servedBots?: () => readonly string[];
  /**
   * True when `claim` also moves the claimed rows' ledger jobs to `active` itself (in the same
   * statement: one round trip, no explicit transaction; the claim-table store does). Otherwise the
   * engine runs `claim` in a transaction and activates the jobs of the returned rows in it.
   */
  readonly activatesJobs?: boolean;
  /**
   * Due `pending` rows → `delivering` under fresh claim ids (FOR UPDATE SKIP LOCKED). `db` is the
   * pool when `activatesJobs` is true, else the engine's transaction client.
   */
  claim(
    db: Queryable,
    args: {
      limit: number;
      workerId: string;
      now: Date | null;
      queue: QueueName;
      onJobsOutOfStep?: (expected: number, moved: number) => void;
    },
  ): Promise<ClaimedJob<Row>[]>;
  /**
   * The claim of given rows only (by business key; a store without `fairBy`): the same rules and
   * ledger activation, in the caller's transaction, for rows that caller has just written (a
   * handled update's replies, see KindWorker.claimIn).
   */
  claimKeys?(
    db: Queryable,
    args: Parameters<ClaimStore<Row, Effects>['claim']>[1] & { keys: readonly string[] },
  ): Promise<ClaimedJob<Row>[]>;
  /** Milliseconds until the earliest pending row is due (0 if due now), or null if none is pending. */
  nextDueInMs(db: Queryable, now: Date | null): Promise<number | null>;
  /**
   * True when `settle`, given items that carry a `mirror`, also moves their ledger jobs and appends
   * their audit rows (fenced ones included) in its statement; the engine then writes neither.
   */
  readonly mirrorsInSettle?: boolean;
  /**
   * Applies outcomes, then the kind's effects step for those whose claim still held; a row whose
   * claim was lost (fenced) is left alone and not returned.
   */
  settle(db: Queryable, items: Settlement<Effects>[], now: Date | null): Promise<SettledRow[]>;
  /**
   * Refreshes the heartbeat of claims. `renewed`: refreshed; `held`: still ours but locked by another
   * session, so not refreshed this time. A claim in neither was lost (recovered elsewhere).
   */
  heartbeat(db: Queryable, claims: ClaimRef[], now: Date | null): Promise<HeartbeatResult>;
  /** `delivering` rows without a heartbeat for `staleMs` → `pending` (or `failed` once the budget is spent). */
  recoverStale(
    db: Queryable,
    args: { staleMs: number; now: Date | null; limit: number; maxAttempts: number },
  ): Promise<RecoveredRow[]>;
  /** Gives claims back unfinished (shutdown): `pending`, due now, the interrupted attempt not counted. */
  release(db: Queryable, claims: ClaimRef[], now: Date | null): Promise<SettledRow[]>;
}

export interface JobContext {
  /** Aborted when the claim is lost or the worker stops for good: give up promptly. */
  signal: AbortSignal;
  logger: Logger;
  workerId: string;
}

/**
 * A job kind: the engine plugin that runs one work type (see work-types.ts) in a worker process —
 * capture.deliver, outbound.send, update.dispatch. The engine owns claiming, concurrency,
 * heartbeats, backoff, budgets, stale recovery, fencing, audit rows and the ledger job mirroring
 * each row; the kind owns its domain rows (its claim store) and what one attempt does.
 *
 * `Row` is the claimed row as `execute` reads it; `Effects` is what an attempt hands to the
 * store's effects step (applied in the outcome transaction, only if the claim still holds).
 */
export interface JobKind<Row = Record<string, unknown>, Effects = unknown> {
  /** Ledger queue carrying the kind (also the NOTIFY payload that wakes it). */
  readonly queue: QueueName;
  readonly store: ClaimStore<Row, Effects>;
  /**
   * One attempt. Expected failures are returned as Retry/Terminal values; a throw is treated as a
   * retryable failure with code RELAY_HANDLER_THREW.
   */
  execute(job: ClaimedJob<Row>, ctx: JobContext): Promise<Outcome<Effects>>;
  /** Frees what the kind holds (HTTP agents, background tasks) after its claim loop stopped. */
  close?(): void | Promise<void>;
  /**
   * For a kind that must not claim until something outside is ready (update dispatch waits for
   * getMe): the claim loop claims nothing before it resolves, and claims at once when it does. It
   * never rejects (a kind that never becomes ready never claims).
   */
  readonly whenReady?: Promise<void>;
}

/**
 * A job kind with its row and effect types erased, for lists of different kinds (the worker's).
 * Sound because the engine only ever passes a kind's own rows and outcomes back to it; the methods'
 * parameters are bivariant, so any `JobKind<Row, Effects>` is assignable.
 */
export type AnyJobKind = JobKind<unknown, unknown>;
