import { QUEUES, QueueName } from '../db/boss';

/** The three kinds of work the admin API lists, retries and cancels, and the tables behind them. */
export type ItemKind = 'captures' | 'outbound' | 'inbox';
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

export const KINDS: Record<ListKind, KindSpec> = {
  captures: {
    kind: 'captures',
    table: 'relay.captures',
    subject: 'capture',
    queue: QUEUES.capture,
    timeColumn: 'created_at',
    states: ['pending', 'delivering', 'delivered', 'failed'],
    pendingState: 'pending',
    doneState: 'delivered',
    chatColumns: ['chat_id'],
    errorColumns: ['last_error', 'failed_reason'],
    keyColumn: 'capture_key',
    noun: 'capture',
  },
  outbound: {
    kind: 'outbound',
    table: 'relay.outbound',
    subject: 'outbound',
    queue: QUEUES.outbound,
    timeColumn: 'created_at',
    states: ['pending', 'delivering', 'delivered', 'failed'],
    pendingState: 'pending',
    doneState: 'delivered',
    chatColumns: ['chat_id', 'target_chat_id'],
    errorColumns: ['last_error', 'failed_reason'],
    keyColumn: 'msg_id',
    noun: 'outbound message',
  },
  inbox: {
    kind: 'inbox',
    table: 'relay.inbox',
    subject: 'inbox',
    queue: QUEUES.dispatch,
    timeColumn: 'received_at',
    states: ['pending', 'handled', 'failed'],
    pendingState: 'pending',
    doneState: 'handled',
    chatColumns: ['chat_id'],
    errorColumns: ['last_error'],
    keyColumn: 'update_id',
    noun: 'inbox update',
  },
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

export const ITEM_KINDS: readonly ItemKind[] = ['captures', 'outbound', 'inbox'];
