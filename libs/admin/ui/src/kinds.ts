import { Child, h } from './dom';
import { fmtTime } from './format';
import type { ListKind, Summaries } from '../api-types';
// the work-type registry itself (dependency-free), bundled: names, nouns, states, allowed actions
import { WORK_TYPES, type WorkType } from '../../../queue/work-types';

/** A state as text in a badge (never colour alone). */
export function stateBadge(state: string): HTMLElement {
  return h('span', { class: `badge state-${state}` }, state);
}

export interface Column<T> {
  label: string;
  cell: (row: T) => Child;
  /** Narrow numeric column. */
  num?: boolean;
}

export interface KindView<K extends ListKind> {
  title: string;
  noun: string;
  states: readonly string[];
  /** Filters this list offers besides state, time and error. */
  chat: boolean;
  /** Bulk retry and single retry exist (not for quarantine). */
  retry: boolean;
  /** Pending items can be cancelled. */
  cancel: boolean;
  timeLabel: string;
  columns: Column<Summaries[K]>[];
}

const err = (row: { failed_reason?: string | null; last_error?: string | null }) => {
  const text = row.failed_reason ?? row.last_error;
  return text ? h('span', { class: 'error-text', title: text }, text) : '—';
};

const time = (iso: string | null) => h('time', { datetime: iso ?? '' }, fmtTime(iso));

/** A work type's view facts from the registry: title, noun, states, whether retry and cancel exist. */
const fromRegistry = (t: WorkType) => ({
  title: t.title,
  noun: t.noun.one,
  states: t.model.states,
  retry: t.model.retryFrom.length > 0,
  cancel: t.model.cancelFrom.length > 0,
});

export const KIND_VIEWS: { [K in ListKind]: KindView<K> } = {
  captures: {
    ...fromRegistry(WORK_TYPES.captures),
    chat: true,
    timeLabel: 'Created',
    columns: [
      { label: 'Created', cell: (r) => time(r.created_at) },
      { label: 'Chat', cell: (r) => r.chat_id, num: true },
      { label: 'Message', cell: (r) => r.message_id, num: true },
      { label: 'State', cell: (r) => stateBadge(r.state) },
      { label: 'Attempts', cell: (r) => `${r.attempts}${r.max_attempts ? ` / ${r.max_attempts}` : ''}`, num: true },
      { label: 'HTTP', cell: (r) => r.last_status ?? '—', num: true },
      { label: 'Error', cell: err },
    ],
  },
  outbound: {
    ...fromRegistry(WORK_TYPES.outbound),
    chat: true,
    timeLabel: 'Created',
    columns: [
      { label: 'Created', cell: (r) => time(r.created_at) },
      { label: 'msg_id', cell: (r) => h('code', null, r.msg_id) },
      { label: 'Method', cell: (r) => h('code', null, r.method) },
      {
        label: 'Chat',
        // an answer to a query belongs to no chat
        cell: (r) =>
          r.chat_id === null
            ? '—'
            : r.target_chat_id !== r.chat_id
              ? `${r.chat_id} → ${r.target_chat_id ?? '—'}`
              : r.chat_id,
      },
      { label: 'Kind', cell: (r) => r.kind },
      { label: 'State', cell: (r) => stateBadge(r.state) },
      { label: 'Attempts', cell: (r) => `${r.attempts}${r.max_attempts ? ` / ${r.max_attempts}` : ''}`, num: true },
      { label: 'HTTP', cell: (r) => r.last_status ?? '—', num: true },
      { label: 'Error', cell: err },
    ],
  },
  inbox: {
    ...fromRegistry(WORK_TYPES.inbox),
    chat: true,
    timeLabel: 'Received',
    columns: [
      { label: 'Received', cell: (r) => time(r.received_at) },
      { label: 'Update', cell: (r) => r.update_id, num: true },
      { label: 'Type', cell: (r) => r.update_type },
      { label: 'Chat', cell: (r) => r.chat_id ?? '—', num: true },
      { label: 'Authorized', cell: (r) => (r.authorized ? 'yes' : 'no') },
      { label: 'State', cell: (r) => stateBadge(r.state) },
      { label: 'Attempts', cell: (r) => r.attempts, num: true },
      { label: 'Error', cell: err },
    ],
  },
  quarantine: {
    title: 'Quarantine',
    noun: 'quarantined update',
    states: ['quarantined', 'released', 'discarded'],
    chat: false,
    retry: false,
    cancel: false,
    timeLabel: 'Quarantined',
    columns: [
      { label: 'Quarantined', cell: (r) => time(r.created_at) },
      { label: 'Update', cell: (r) => r.update_id ?? '—', num: true },
      { label: 'Size', cell: (r) => `${r.size_bytes} B`, num: true },
      { label: 'State', cell: (r) => stateBadge(r.state) },
      { label: 'Error', cell: (r) => h('span', { class: 'error-text', title: r.error }, r.error) },
      { label: 'Path', cell: (r) => (r.json_path ? h('code', null, r.json_path) : '—') },
    ],
  },
};

/** Overview cards: the work kinds by the name operators use. */
export const WORK_CARDS: { kind: 'inbox' | 'captures' | 'outbound'; title: string; what: string }[] = [
  { kind: 'inbox', title: 'Dispatch', what: 'updates handed to the bot handlers' },
  { kind: 'captures', title: 'Captures', what: 'messages posted to the collector' },
  { kind: 'outbound', title: 'Outbound', what: 'messages sent to Telegram' },
];
