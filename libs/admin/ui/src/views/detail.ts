import { ApiError, describeError } from '../api';
import { confirmDialog } from '../dialog';
import { Child, h, replaceKeepingFocus, setStatus, statusRegion } from '../dom';
import { fmtMs, fmtTime, pretty, text } from '../format';
import { KIND_VIEWS, stateBadge } from '../kinds';
import { listHash } from '../router';
import type { ActionResult, AttemptRow, Details, ListKind } from '../../api-types';
import type { View, ViewContext } from '../view';

/** Fields that hold what users wrote: shown only on request. */
const HIDDEN: Record<ListKind, { key: string; label: string; render: (v: unknown) => string }[]> = {
  captures: [{ key: 'payload', label: 'payload (message text and sender)', render: pretty }],
  outbound: [
    { key: 'text', label: 'message text', render: (v) => String(v) },
    { key: 'reply_markup', label: 'reply markup', render: pretty },
    // methods other than sendMessage: caption, media, the edited text… (files by URL, file_id or attach://part)
    { key: 'params', label: 'parameters', render: pretty },
  ],
  inbox: [{ key: 'payload', label: 'raw update', render: pretty }],
  quarantine: [{ key: 'raw_base64', label: 'raw bytes', render: (v) => decodeBase64(String(v)) }],
};

function decodeBase64(b64: string): string {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  return new TextDecoder('utf-8', { fatal: false }).decode(bytes);
}

/** Identity first, then where the delivery stands, then times; anything else after. */
const FIELD_ORDER = [
  'capture_key',
  'msg_id',
  'method',
  'update_id',
  'update_type',
  'bot_id',
  'chat_id',
  'target_chat_id',
  'message_id',
  'from_id',
  'kind',
  'delivery',
  'authorized',
  'state',
  'attempts',
  'max_attempts',
  'last_status',
  'last_error',
  'failed_reason',
  'error',
  'json_path',
  'next_attempt_at',
  'worker_id',
  'started_at',
  'created_at',
  'received_at',
  'message_date',
  'updated_at',
  'delivered_at',
  'handled_at',
  'resolved_at',
  'telegram_message_id',
  'telegram_message_ids',
  'message_count',
  'uploads',
  'source_update_id',
  'trace_id',
];
const rank = (k: string) => {
  const i = FIELD_ORDER.indexOf(k);
  return i < 0 ? FIELD_ORDER.length : i;
};

const ADMIN_ACTIONS: Record<string, string> = {
  retry: 'retry',
  retry_bulk: 'bulk retry',
  retry_bulk_dry_run: 'bulk retry, dry run (counted only)',
  cancel: 'cancel',
  recover_stale: 'recover stale',
  release: 'release',
  discard: 'discard',
  enqueue: 'enqueued',
};

const isTimeKey = (k: string) => k.endsWith('_at') || k === 'message_date';

function value(k: string, v: unknown): Child {
  if (v === null || v === undefined || v === '') return h('span', { class: 'muted' }, '—');
  if (k === 'state') return stateBadge(text(v));
  if (isTimeKey(k)) return h('time', { datetime: text(v), title: text(v) }, fmtTime(text(v)));
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'object') return h('code', null, JSON.stringify(v));
  if (/error|reason/.test(k)) return h('span', { class: 'error-text' }, text(v));
  return text(v);
}

/** The item's OpenTelemetry trace id, linked to the trace viewer when TRACE_URL_TEMPLATE is set. */
function traceLink(traceId: unknown, url: unknown): Child {
  if (typeof traceId !== 'string' || traceId === '') return h('span', { class: 'muted' }, '— (not traced)');
  if (typeof url !== 'string' || !/^https?:\/\//i.test(url)) return h('code', null, traceId);
  return h(
    'a',
    { href: url, target: '_blank', rel: 'noopener noreferrer', title: 'open the trace' },
    h('code', null, traceId),
  );
}

function timeline(history: AttemptRow[]): HTMLElement {
  if (history.length === 0) return h('p', { class: 'empty' }, 'No attempt yet.');
  const rows = history.map((a) => {
    const admin = a.outcome.startsWith('admin.');
    const outcome = admin
      ? (ADMIN_ACTIONS[a.outcome.slice('admin.'.length)] ?? a.outcome.slice('admin.'.length).replace(/_/g, ' '))
      : a.outcome;
    const details = a.details && typeof a.details === 'object' ? (a.details as Record<string, unknown>) : null;
    const note = admin
      ? [
          details?.reason ? `reason: ${text(details.reason)}` : null,
          details?.result === 'refused' ? 'refused' : null,
          details?.dry_run === true
            ? `matched ${text(details.matched ?? '?')}`
            : details?.count !== undefined && details?.ids
              ? `bulk (${text(details.count)})`
              : null,
        ]
          .filter(Boolean)
          .join(' · ')
      : null;
    return h(
      'tr',
      { class: admin ? `admin-row${a.outcome.endsWith('_dry_run') ? ' dry-run' : ''}` : '', 'data-outcome': a.outcome },
      h('td', null, h('time', { datetime: a.started_at, title: a.started_at }, fmtTime(a.started_at))),
      h('td', { class: 'num' }, admin ? '—' : (a.attempt ?? '—')),
      h(
        'td',
        null,
        admin
          ? h('span', { class: 'badge admin' }, `admin: ${outcome}`)
          : h('span', { class: `badge outcome-${outcome}` }, outcome),
      ),
      h('td', { class: 'num' }, a.http_status ?? '—'),
      h(
        'td',
        null,
        a.error_code ? h('code', null, a.error_code) : null,
        a.error_code && a.error ? ' ' : null,
        a.error ? h('span', { class: 'error-text' }, a.error) : null,
        note ? h('span', { class: 'muted' }, note) : null,
        !a.error && !a.error_code && !note ? '—' : null,
      ),
      h('td', null, a.worker_id ? h('code', null, a.worker_id) : '—'),
      h('td', { class: 'num' }, fmtMs(a.duration_ms)),
      h('td', null, a.actor ?? '—'),
    );
  });
  return h(
    'table',
    { class: 'grid timeline' },
    h('caption', null, `Attempt history (${history.length}), oldest first — deliveries and admin actions`),
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        ['Started', 'Attempt', 'Outcome', 'HTTP', 'Error', 'Worker', 'Duration', 'By'].map((t) =>
          h('th', { scope: 'col' }, t),
        ),
      ),
    ),
    h('tbody', null, rows),
  );
}

export function detailView<K extends ListKind>(ctx: ViewContext, kind: K, id: number): View {
  const spec = KIND_VIEWS[kind];
  const revealed = new Set<string>();
  const heading = h('h1', { tabindex: -1 }, `${spec.noun[0].toUpperCase()}${spec.noun.slice(1)} #${id}`);
  const badge = h('span');
  const status = statusRegion();
  const actions = h('div', { class: 'toolbar', role: 'group', 'aria-label': 'Actions' });
  const meta = h('div');
  const secrets = h('div');
  const history = h('section', { 'aria-label': 'Attempt history' });
  let current: Details[K] | null = null;

  async function act(action: 'retry' | 'cancel' | 'release' | 'discard'): Promise<void> {
    const what = `${spec.noun} #${id}`;
    const copy = {
      retry: {
        title: `Retry ${what} now?`,
        text: 'It returns to pending with a renewed attempt budget and is delivered again.',
        label: 'Retry now',
        danger: false,
      },
      cancel: {
        title: `Cancel ${what}?`,
        text: 'It becomes failed with reason “cancelled” and will not be delivered (it can be retried later).',
        label: 'Cancel it',
        danger: true,
      },
      release: {
        title: `Release ${what}?`,
        text: 'It is decoded again and stored through the normal ingress path (inbox, capture, jobs).',
        label: 'Release',
        danger: false,
      },
      discard: {
        title: `Discard ${what}?`,
        text: 'It is marked discarded; its bytes are kept.',
        label: 'Discard',
        danger: true,
      },
    }[action];
    const { confirmed, reason } = await confirmDialog({
      title: copy.title,
      body: [h('p', null, copy.text)],
      confirmLabel: copy.label,
      reason: true,
      danger: copy.danger,
    });
    if (!confirmed) return;
    try {
      const r = await ctx.api.post<ActionResult>(`v1/${kind}/${id}/${action}`, reason ? { reason } : {});
      setStatus(
        status,
        'ok',
        `${copy.label}: done — now ${r.state}${r.outcome ? ` (${text(r.outcome)})` : ''}, audit #${r.audit_id}`,
      );
    } catch (err) {
      setStatus(status, 'error', `${copy.label} refused: ${describeError(err)}`);
    }
    await view.refresh();
  }

  function renderActions(row: Details[K]): void {
    const state = row.state;
    const buttons: HTMLElement[] = [];
    if (spec.retry && state === 'failed')
      buttons.push(
        h(
          'button',
          { type: 'button', class: 'primary', 'data-focus-key': 'retry', onclick: () => void act('retry') },
          'Retry now…',
        ),
      );
    if (spec.cancel && state === 'pending')
      buttons.push(
        h(
          'button',
          { type: 'button', class: 'danger', 'data-focus-key': 'cancel', onclick: () => void act('cancel') },
          'Cancel…',
        ),
      );
    if (kind === 'quarantine' && state === 'quarantined') {
      buttons.push(
        h(
          'button',
          { type: 'button', class: 'primary', 'data-focus-key': 'release', onclick: () => void act('release') },
          'Release…',
        ),
      );
      buttons.push(
        h(
          'button',
          { type: 'button', class: 'danger', 'data-focus-key': 'discard', onclick: () => void act('discard') },
          'Discard…',
        ),
      );
    }
    replaceKeepingFocus(
      actions,
      buttons.length ? buttons : h('span', { class: 'muted' }, `No action applies to a ${state} ${spec.noun}.`),
    );
  }

  /** What a row without a message text carries instead (an outbound call other than sendMessage). */
  function contentNote(r: Record<string, unknown>): Child {
    if (kind !== 'outbound' || r.text !== null || typeof r.method !== 'string') return null;
    const p = r.params && typeof r.params === 'object' ? (r.params as Record<string, unknown>) : {};
    const has = ['caption', 'text', 'media'].filter((k) => p[k] !== undefined && p[k] !== null);
    return h(
      'p',
      { class: 'muted small', 'data-content-note': '' },
      `No message text: a ${r.method} carries ${has.length ? has.join(', ') : 'its content'} in its parameters.`,
    );
  }

  function renderSecrets(row: Details[K]): void {
    const r = row as unknown as Record<string, unknown>;
    replaceKeepingFocus(
      secrets,
      contentNote(r),
      HIDDEN[kind]
        .filter((f) => r[f.key] !== undefined && r[f.key] !== null)
        .map((f) => {
          const shown = revealed.has(f.key);
          const boxId = `secret-${f.key}`;
          const button = h(
            'button',
            {
              type: 'button',
              'aria-expanded': shown ? 'true' : 'false',
              'aria-controls': boxId,
              'data-focus-key': `reveal-${f.key}`,
              onclick: () => {
                if (revealed.has(f.key)) revealed.delete(f.key);
                else revealed.add(f.key);
                renderSecrets(row);
              },
            },
            shown ? `Hide ${f.label}` : `Reveal ${f.label}`,
          );
          return h(
            'div',
            { class: 'secret' },
            button,
            h('pre', { id: boxId, hidden: !shown, class: 'payload' }, shown ? f.render(r[f.key]) : ''),
          );
        }),
    );
  }

  const el = h(
    'div',
    { class: 'detail' },
    h('p', { class: 'crumbs' }, h('a', { href: listHash(kind) }, `← ${spec.title}`)),
    h('div', { class: 'page-head' }, heading, badge),
    actions,
    status,
    h(
      'div',
      { class: 'detail-grid' },
      h('section', { 'aria-label': 'Metadata' }, meta),
      h(
        'section',
        { 'aria-label': 'Content' },
        h('h2', null, 'Content'),
        h('p', { class: 'muted small' }, 'Hidden by default: it holds what users wrote.'),
        secrets,
      ),
    ),
    history,
  );

  const view: View = {
    title: `${spec.title} #${id}`,
    el,
    async refresh() {
      try {
        current = await ctx.api.get<Details[K]>(`v1/${kind}/${id}`);
      } catch (err) {
        if (err instanceof ApiError && err.status === 404)
          replaceKeepingFocus(meta, h('p', { role: 'alert', class: 'error' }, `${spec.noun} #${id} does not exist.`));
        else replaceKeepingFocus(meta, h('p', { role: 'alert', class: 'error' }, describeError(err)));
        return;
      }
      const row = current as unknown as Record<string, unknown>;
      replaceKeepingFocus(badge, stateBadge(String(row.state)));
      renderActions(current);
      const hidden = new Set([...HIDDEN[kind].map((f) => f.key), 'history', 'id', 'trace_url']);
      replaceKeepingFocus(
        meta,
        h(
          'dl',
          { class: 'meta' },
          Object.entries(row)
            .filter(([k]) => !hidden.has(k))
            .sort(([a], [b]) => rank(a) - rank(b))
            .map(([k, v]) => [
              h('dt', null, k),
              h('dd', { 'data-field': k }, k === 'trace_id' ? traceLink(v, row.trace_url) : value(k, v)),
            ]),
        ),
      );
      renderSecrets(current);
      replaceKeepingFocus(history, h('h2', null, 'Attempts'), timeline(current.history));
    },
  };
  return view;
}
