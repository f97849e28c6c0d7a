import { ApiError, describeError } from '../api';
import { confirmDialog } from '../dialog';
import { Child, h, replaceKeepingFocus, setStatus, statusRegion } from '../dom';
import { fmtAge, fmtCount, fmtTime, text } from '../format';
import { stateBadge } from '../kinds';
import { broadcastHash } from '../router';
import type { BroadcastStatus } from '../../api-types';
import type { View, ViewContext } from '../view';

type Counts = BroadcastStatus['counts'];
const PAGE = 25;

/** The parts of the bar, in order; whatever is left (pending, paused) is the empty part. */
const SEGMENTS: { key: keyof Counts; label: string }[] = [
  { key: 'delivered', label: 'delivered' },
  { key: 'failed', label: 'failed' },
  { key: 'blocked', label: 'blocked or deactivated' },
  { key: 'cancelled', label: 'cancelled' },
  { key: 'delivering', label: 'being sent' },
];

/** Rows that will not change any more, out of the recipients. */
const finished = (c: Counts) => c.delivered + c.failed + c.blocked + c.cancelled;

function progressText(b: BroadcastStatus): string {
  const done = finished(b.counts);
  const pct = b.recipients === 0 ? 100 : Math.floor((done * 100) / b.recipients);
  return `${fmtCount(done)} of ${fmtCount(b.recipients)} done (${pct}%)`;
}

/** A stacked bar with its figures as text (the colours only repeat what the text says). */
function progressBar(b: BroadcastStatus, large = false): HTMLElement {
  const total = Math.max(1, b.recipients);
  const label = progressText(b);
  return h(
    'span',
    { class: `progress${large ? ' large' : ''}` },
    h(
      'span',
      {
        class: 'bar',
        role: 'progressbar',
        'aria-label': `Broadcast #${b.id}`,
        'aria-valuemin': 0,
        'aria-valuemax': b.recipients,
        'aria-valuenow': finished(b.counts),
        'aria-valuetext': label,
      },
      SEGMENTS.filter((s) => b.counts[s.key] > 0).map((s) => {
        const seg = h('span', { class: `seg seg-${s.key}`, title: `${fmtCount(b.counts[s.key])} ${s.label}` });
        // through CSSOM: the page's CSP (style-src 'self') refuses style attributes
        seg.style.width = `${(b.counts[s.key] * 100) / total}%`;
        return seg;
      }),
    ),
    h('span', { class: 'small' }, label),
  );
}

function eta(b: BroadcastStatus): string {
  if (b.state === 'completed' || b.state === 'cancelled') return '—';
  if (b.state === 'paused') return 'paused';
  if (b.eta_seconds === null) return 'not moving yet';
  return fmtAge(b.eta_seconds);
}

function audience(b: BroadcastStatus): string {
  const a = b.audience;
  if (typeof a.name === 'string') return `audience "${a.name}"`;
  if (typeof a.chat_ids === 'number') return `a list of ${fmtCount(a.chat_ids)} chats`;
  return text(a);
}

const rate = (b: BroadcastStatus) => `${b.rate.toLocaleString('en-US')}/s`;
const stars = (n: number) => `${n.toLocaleString('en-US', { maximumFractionDigits: 1 })} Stars`;

/** GET /v1/broadcasts: newest first, with progress, rate and ETA. */
export function broadcastsView(ctx: ViewContext, params: URLSearchParams): View {
  const before = params.get('before') ?? undefined;
  const box = h('div', { class: 'table-box' });
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages' });
  const el = h(
    'div',
    null,
    h(
      'div',
      { class: 'page-head' },
      h('h1', { tabindex: -1 }, 'Broadcasts'),
      h('p', { class: 'muted small' }, 'One message to many chats (POST /v1/broadcasts), newest first.'),
    ),
    box,
    pager,
  );
  return {
    title: 'Broadcasts',
    el,
    async refresh() {
      let items: BroadcastStatus[];
      try {
        ({ items } = await ctx.api.get<{ items: BroadcastStatus[] }>('v1/broadcasts', { limit: PAGE, before }));
      } catch (err) {
        replaceKeepingFocus(box, h('p', { role: 'alert', class: 'error' }, describeError(err)));
        return;
      }
      const rows = items.map((b) =>
        h(
          'tr',
          { 'data-broadcast': b.id },
          h('td', null, h('a', { href: broadcastHash(b.id), 'data-focus-key': `b-${b.id}` }, `#${b.id}`)),
          h('td', null, h('time', { datetime: b.created_at, title: b.created_at }, fmtTime(b.created_at))),
          h('td', null, stateBadge(b.state)),
          h('td', null, b.method, h('br'), h('span', { class: 'muted small' }, audience(b))),
          h('td', null, progressBar(b)),
          h('td', { class: 'num' }, fmtCount(b.counts.failed)),
          h('td', { class: 'num' }, fmtCount(b.counts.blocked)),
          h('td', { class: 'num' }, rate(b)),
          h('td', null, eta(b)),
        ),
      );
      replaceKeepingFocus(
        box,
        rows.length === 0
          ? h('p', { class: 'empty' }, 'No broadcast yet: POST /v1/broadcasts starts one (docs/broadcasts.md).')
          : h(
              'table',
              { class: 'grid' },
              h('caption', { class: 'visually-hidden' }, 'Broadcasts, newest first'),
              h(
                'thead',
                null,
                h(
                  'tr',
                  null,
                  ['Broadcast', 'Created', 'State', 'Message', 'Progress', 'Failed', 'Blocked', 'Rate', 'ETA'].map(
                    (t) => h('th', { scope: 'col' }, t),
                  ),
                ),
              ),
              h('tbody', null, rows),
            ),
      );
      const last = items.at(-1);
      replaceKeepingFocus(
        pager,
        before ? h('a', { href: '#/broadcasts', 'data-focus-key': 'first' }, '« Newest') : null,
        last && items.length === PAGE
          ? h('a', { href: `#/broadcasts?before=${last.id}`, 'data-focus-key': 'next' }, 'Older »')
          : null,
      );
    },
  };
}

type Action = 'pause' | 'resume' | 'cancel';

const ACTIONS: Record<Action, { from: string[]; label: string; text: string; danger: boolean; done: string }> = {
  pause: {
    from: ['pending', 'running'],
    label: 'Pause',
    text: 'Messages not yet sent are held; the ones already on their way finish.',
    danger: false,
    done: 'held',
  },
  resume: {
    from: ['paused'],
    label: 'Resume',
    text: 'The held messages are sent again, at the bulk rate, behind interactive traffic.',
    danger: false,
    done: 'released',
  },
  cancel: {
    from: ['pending', 'running', 'paused'],
    label: 'Cancel',
    text: 'Messages not yet sent fail as cancelled and are never sent. This cannot be undone.',
    danger: true,
    done: 'cancelled',
  },
};

function figures(rows: [string, Child, string?][]): HTMLElement {
  return h(
    'dl',
    { class: 'meta' },
    rows.map(([label, v, key]) => [h('dt', null, label), h('dd', key ? { 'data-count': key } : null, v)]),
  );
}

/** GET /v1/broadcasts/:id with pause, resume and cancel (each confirmed, audited, its answer shown). */
export function broadcastView(ctx: ViewContext, id: string): View {
  const badge = h('span');
  const bar = h('div', { class: 'broadcast-progress' });
  const actions = h('div', { class: 'toolbar', role: 'group', 'aria-label': 'Actions' });
  const status = statusRegion();
  const progress = h('section', { 'aria-label': 'Progress' });
  const plan = h('section', { 'aria-label': 'Plan' });

  async function act(action: Action): Promise<void> {
    const copy = ACTIONS[action];
    const { confirmed } = await confirmDialog({
      title: `${copy.label} broadcast #${id}?`,
      body: [h('p', null, copy.text)],
      // "Cancel" alone would read like the button that closes the dialog
      confirmLabel: `${copy.label} broadcast`,
      danger: copy.danger,
    });
    if (!confirmed) return;
    try {
      const r = await ctx.api.post<BroadcastStatus & { moved: number; audit_id: number }>(
        `v1/broadcasts/${id}/${action}`,
        {},
      );
      setStatus(
        status,
        'ok',
        `${copy.label}: done — now ${r.state}, ${fmtCount(r.moved)} messages ${copy.done}, audit #${r.audit_id}`,
      );
    } catch (err) {
      setStatus(status, 'error', `${copy.label} refused: ${describeError(err)}`);
    }
    await view.refresh();
  }

  function render(b: BroadcastStatus): void {
    const c = b.counts;
    replaceKeepingFocus(badge, stateBadge(b.state));
    replaceKeepingFocus(bar, progressBar(b, true));
    const buttons = (Object.keys(ACTIONS) as Action[])
      .filter((a) => ACTIONS[a].from.includes(b.state))
      .map((a) =>
        h(
          'button',
          {
            type: 'button',
            class: ACTIONS[a].danger ? 'danger' : 'primary',
            'data-focus-key': a,
            onclick: () => void act(a),
          },
          `${ACTIONS[a].label}…`,
        ),
      );
    replaceKeepingFocus(
      actions,
      buttons.length ? buttons : h('span', { class: 'muted' }, `No action applies to a ${b.state} broadcast.`),
    );
    replaceKeepingFocus(
      progress,
      h('h2', null, 'Progress'),
      figures([
        ['delivered', fmtCount(c.delivered), 'delivered'],
        ['failed', fmtCount(c.failed), 'failed'],
        ['blocked or deactivated (403, recorded in relay.chat_status)', fmtCount(c.blocked), 'blocked'],
        ['cancelled', fmtCount(c.cancelled), 'cancelled'],
        ['being sent', fmtCount(c.delivering), 'delivering'],
        ['waiting', fmtCount(c.pending), 'pending'],
        ['held (paused)', fmtCount(c.paused), 'paused'],
        ['skipped (known blocked, not sent)', fmtCount(c.skipped), 'skipped'],
        ['rate, last minute', rate(b)],
        ['time left', eta(b)],
      ]),
    );
    const p = b.plan;
    replaceKeepingFocus(
      plan,
      h('h2', null, 'Message and plan'),
      figures([
        ['method', b.method],
        ['audience', audience(b)],
        ['key', b.key ?? h('span', { class: 'muted' }, '—')],
        ['bot', b.bot_id],
        ['created', h('time', { datetime: b.created_at, title: b.created_at }, fmtTime(b.created_at))],
        ['messages planned', fmtCount(p.messages)],
        ['planned rate', `${p.rate_per_second.toLocaleString('en-US')}/s${p.paid ? ' (paid broadcast)' : ''}`],
        ['planned duration', fmtAge(p.estimated_seconds)],
        ['paid messages (above 30/s)', fmtCount(p.paid_messages)],
        ['cost', stars(p.cost_stars), 'cost'],
      ]),
    );
  }

  const heading = h('h1', { tabindex: -1 }, `Broadcast #${id}`);
  const el = h(
    'div',
    { class: 'detail' },
    h('p', { class: 'crumbs' }, h('a', { href: '#/broadcasts' }, '← Broadcasts')),
    h('div', { class: 'page-head' }, heading, badge),
    bar,
    actions,
    status,
    h('div', { class: 'detail-grid' }, progress, plan),
  );

  const view: View = {
    title: `Broadcast #${id}`,
    el,
    async refresh() {
      let b: BroadcastStatus;
      try {
        b = await ctx.api.get<BroadcastStatus>(`v1/broadcasts/${id}`);
      } catch (err) {
        const msg =
          err instanceof ApiError && err.status === 404 ? `Broadcast #${id} does not exist.` : describeError(err);
        replaceKeepingFocus(progress, h('p', { role: 'alert', class: 'error' }, msg));
        return;
      }
      render(b);
    },
  };
  return view;
}
