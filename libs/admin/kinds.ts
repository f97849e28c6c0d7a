import type { QueueName } from '../db/boss';
import { WORK_TYPE_NAMES, WORK_TYPES, type WorkType, type WorkTypeName } from '../queue/work-types';

/**
 * The work types the admin API lists, retries and cancels (the registry's, libs/queue/work-types.ts).
 * The API calls them `kind` (`/v1/{kind}/…`); `ItemKind` is that name in this module.
 */
export type ItemKind = WorkTypeName;
/** Everything a list/detail route serves: the work kinds plus quarantined updates. */
export type ListKind = ItemKind | 'quarantine';

export interface KindSpec {
  kind: ListKind;
  /** Escaped table name (constant, never from input). */
  table: string;
  /** `relay.attempts.subject` of this kind's delivery attempts. */
  subject: 'capture' | 'outbound' | 'inbox' | 'quarantine';
  queue?: QueueName;
  /** Time column the lists order and filter by. */
  timeColumn: string;
  states: readonly string[];
  /** The state a worker is still responsible for (stats "oldest pending"). */
  pendingState?: string;
  /** Terminal success: rows only ever enter it, so its count never shrinks (stats may estimate it). */
  doneState?: string;
  /** Column matched by `?chat=` (outbound matches the enqueued or the current target chat). */
  chatColumns: readonly string[];
  /** Columns searched by `?error=`. */
  errorColumns: readonly string[];
  /** Business key recorded as the audit row's subject_key. */
  keyColumn: string;
  /** Human name in messages. */
  noun: string;
}

/** A work type as the admin lists it: the registry's facts plus the list's own columns. */
function workKind(t: WorkType, list: Pick<KindSpec, 'timeColumn' | 'chatColumns' | 'errorColumns'>): KindSpec {
  return {
    kind: t.name,
    table: t.table,
    subject: t.subject,
    queue: t.queue,
    states: t.model.states,
    pendingState: t.model.pending,
    doneState: t.model.done,
    keyColumn: t.keyColumn,
    noun: t.noun.one,
    ...list,
  };
}

export const KINDS: Record<ListKind, KindSpec> = {
  captures: workKind(WORK_TYPES.captures, {
    timeColumn: 'created_at',
    chatColumns: ['chat_id'],
    errorColumns: ['last_error', 'failed_reason'],
  }),
  outbound: workKind(WORK_TYPES.outbound, {
    timeColumn: 'created_at',
    chatColumns: ['chat_id', 'target_chat_id'],
    errorColumns: ['last_error', 'failed_reason'],
  }),
  inbox: workKind(WORK_TYPES.inbox, {
    timeColumn: 'received_at',
    chatColumns: ['chat_id'],
    errorColumns: ['last_error'],
  }),
  quarantine: {
    kind: 'quarantine',
    table: 'relay.quarantine',
    subject: 'quarantine',
    timeColumn: 'created_at',
    states: ['quarantined', 'released', 'discarded'],
    chatColumns: [],
    errorColumns: ['error'],
    keyColumn: 'sha256',
    noun: 'quarantined update',
  },
};

export const ITEM_KINDS: readonly ItemKind[] = WORK_TYPE_NAMES;

/** The work types' audit subjects as an SQL list of literals (constants from the registry). */
export const WORK_SUBJECTS_SQL = ITEM_KINDS.map((k) => `'${WORK_TYPES[k].subject}'`).join(', ');
/** The tables behind every list (work types and quarantine) by name in `relay`, as an SQL list of literals. */
export const LIST_TABLES_SQL = Object.values(KINDS)
  .map((k) => `'${k.table.replace('relay.', '')}'`)
  .join(', ');
