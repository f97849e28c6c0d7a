/**
 * The registry of work types: the three kinds of durable work the engine runs, each with its one
 * name per concept. Everything that lists, counts, retries, cancels, recovers or names them reads
 * this table: the engine (claim tables, rescuer), operator actions, the admin API (routes, stats,
 * metrics) and the dashboard (which bundles this file: it must stay free of imports and Node APIs).
 *
 * Vocabulary (docs/architecture.md):
 *  - work type: captures | outbound | inbox — a table of durable work items and its job ledger queue.
 *    The admin API calls it `kind` in its paths and bodies (`/v1/{kind}/…`, `kinds: [...]`), which
 *    stays as it is for compatibility; `name` below is that value.
 *  - job kind (`JobKind`): the engine plugin that runs one work type in a worker process.
 *  - outbound message kind (`relay.outbound.kind`: message | reply | alert): a column, unrelated.
 */

/** The work types, in the order the API and the dashboard list them. */
export const WORK_TYPE_NAMES = ['captures', 'outbound', 'inbox'] as const;
export type WorkTypeName = (typeof WORK_TYPE_NAMES)[number];

/** `relay.attempts.subject` values written for work types. */
export type WorkSubject = 'capture' | 'outbound' | 'inbox';

/** Job ledger queue names (libs/db/boss.ts QUEUES holds the same values under the engine's keys). */
export type WorkQueue = 'capture.deliver' | 'outbound.send' | 'update.dispatch';

/** A work type's states and what may happen to a row in each. */
export interface StateModel<S extends string = string> {
  /** Every state a row can be in, in lifecycle order. */
  readonly states: readonly S[];
  /** Waiting for a worker (due now or later). */
  readonly pending: S;
  /**
   * The state of a row a worker holds: `delivering`, or for the inbox `pending` with claim_id set
   * (the inbox has no separate state for it; see `claimMarksState`).
   */
  readonly claimed: S;
  /** True when claiming moves the row to `claimed`; false when a claim only sets claim_id. */
  readonly claimMarksState: boolean;
  /** Terminal success (rows only ever enter it, so its count never shrinks). */
  readonly done: S;
  /** Terminal failure. */
  readonly failed: S;
  readonly terminal: readonly S[];
  /** States an operator may retry from (→ pending, budget renewed). */
  readonly retryFrom: readonly S[];
  /** States an operator may cancel from (→ failed 'cancelled'); empty: not cancellable. */
  readonly cancelFrom: readonly S[];
  /** An operator may recover stale claims of this type (POST /v1/recover-stale). */
  readonly recoverable: boolean;
}

export interface WorkType<S extends string = string> {
  /** Registry key, table name in `relay`, and the admin API's `kind` value. */
  readonly name: WorkTypeName;
  readonly queue: WorkQueue;
  /** Schema-qualified table (a constant, never input). */
  readonly table: string;
  readonly subject: WorkSubject;
  /** Business key column, recorded as the audit row's subject_key. */
  readonly keyColumn: string;
  readonly model: StateModel<S>;
  /** What operators call one item and several. */
  readonly noun: { readonly one: string; readonly many: string };
  /** Heading of its list in the dashboard. */
  readonly title: string;
}

const CLAIM_TABLE_MODEL: StateModel<'pending' | 'delivering' | 'delivered' | 'failed'> = {
  states: ['pending', 'delivering', 'delivered', 'failed'],
  pending: 'pending',
  claimed: 'delivering',
  claimMarksState: true,
  done: 'delivered',
  failed: 'failed',
  terminal: ['delivered', 'failed'],
  retryFrom: ['failed'],
  cancelFrom: ['pending'],
  recoverable: true,
};

export const WORK_TYPES: { readonly [N in WorkTypeName]: WorkType } = {
  captures: {
    name: 'captures',
    queue: 'capture.deliver',
    table: 'relay.captures',
    subject: 'capture',
    keyColumn: 'capture_key',
    model: CLAIM_TABLE_MODEL,
    noun: { one: 'capture', many: 'captures' },
    title: 'Captures',
  },
  outbound: {
    name: 'outbound',
    queue: 'outbound.send',
    table: 'relay.outbound',
    subject: 'outbound',
    keyColumn: 'msg_id',
    model: CLAIM_TABLE_MODEL,
    noun: { one: 'outbound message', many: 'outbound messages' },
    title: 'Outbound',
  },
  inbox: {
    name: 'inbox',
    queue: 'update.dispatch',
    table: 'relay.inbox',
    subject: 'inbox',
    keyColumn: 'update_id',
    model: {
      states: ['pending', 'handled', 'failed'],
      pending: 'pending',
      claimed: 'pending',
      claimMarksState: false,
      done: 'handled',
      failed: 'failed',
      terminal: ['handled', 'failed'],
      retryFrom: ['failed'],
      cancelFrom: [],
      recoverable: true,
    },
    noun: { one: 'inbox update', many: 'inbox updates' },
    title: 'Inbox',
  },
};

/** The registry as a list, in WORK_TYPE_NAMES order. */
export const WORK_TYPE_LIST: readonly WorkType[] = WORK_TYPE_NAMES.map((n) => WORK_TYPES[n]);

export function isWorkTypeName(s: string): s is WorkTypeName {
  return (WORK_TYPE_NAMES as readonly string[]).includes(s);
}

/** The work type whose queue is `queue`, or undefined. */
export function workTypeOfQueue(queue: string): WorkType | undefined {
  return WORK_TYPE_LIST.find((t) => t.queue === queue);
}

/** The work type whose audit subject is `subject`, or undefined. */
export function workTypeOfSubject(subject: string): WorkType | undefined {
  return WORK_TYPE_LIST.find((t) => t.subject === subject);
}
