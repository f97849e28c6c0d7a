import { describeError } from '../api';
import { barChart } from '../charts';
import { confirmDialog } from '../dialog';
import { h, replaceKeepingFocus, setStatus, statusRegion } from '../dom';
import { fmtAge, fmtCount } from '../format';
import { KIND_VIEWS, stateBadge, WORK_CARDS } from '../kinds';
import { detailHash, listHash } from '../router';
import type { AttemptTimeseries, BotStats, Stats } from '../../api-types';
import type { View, ViewContext } from '../view';

function workCard(stats: Stats, series: AttemptTimeseries | null, card: (typeof WORK_CARDS)[number]): HTMLElement {
  const ks = stats.kinds[card.kind];
  const spec = KIND_VIEWS[card.kind];
  const headingId = `card-${card.kind}`;
  const rows = spec.states.map((state) => {
    const c = ks?.states[state] ?? { count: 0, approximate: false };
    return h(
      'tr',
      null,
      h('th', { scope: 'row' }, stateBadge(state)),
      h(
        'td',
        { class: 'num', 'data-kind': card.kind, 'data-state': state, 'data-count': c.count },
        h(
          'a',
          {
            href: listHash(card.kind, { state }),
            'data-focus-key': `count-${card.kind}-${state}`,
            'aria-label': `${fmtCount(c.count, c.approximate)} ${state} — list them`,
          },
          fmtCount(c.count, c.approximate),
        ),
      ),
    );
  });
  const buckets = series?.kinds[card.kind] ?? [];
  const total = buckets.reduce(
    (a, b) => ({ attempts: a.attempts + b.attempts, delivered: a.delivered + b.delivered }),
    { attempts: 0, delivered: 0 },
  );
  const charts = buckets.length
    ? [
        barChart({
          label: card.kind === 'inbox' ? 'Handled / min' : 'Delivered / min',
          headline: `${total.delivered} in ${buckets.length} min`,
          points: buckets.map((b) => ({ at: b.at, value: b.delivered })),
          format: (v) => String(v),
        }),
        barChart({
          label: 'Failure rate',
          headline: total.attempts
            ? `${Math.round(((total.attempts - total.delivered) / total.attempts) * 100)}%`
            : '—',
          tone: 'bad',
          max: 100,
          points: buckets.map((b) => ({
            at: b.at,
            value: b.attempts ? Math.round(((b.attempts - b.delivered) / b.attempts) * 100) : null,
          })),
          format: (v) => `${v}%`,
        }),
      ]
    : [h('p', { class: 'muted' }, 'No time series (GET /v1/stats/timeseries did not answer).')];
  return h(
    'section',
    { class: 'card', 'aria-labelledby': headingId },
    h(
      'h2',
      { id: headingId },
      h('a', { href: listHash(card.kind), 'data-focus-key': `title-${card.kind}` }, card.title),
    ),
    h('p', { class: 'muted' }, card.what),
    h(
      'table',
      { class: 'counts' },
      h('caption', { class: 'visually-hidden' }, `${card.title}: items per state`),
      h('tbody', null, rows),
    ),
    h(
      'dl',
      { class: 'facts' },
      h('dt', null, 'Oldest pending'),
      h(
        'dd',
        { 'data-oldest': card.kind },
        ks?.oldest_pending_age_seconds === null || !ks ? 'none' : fmtAge(ks.oldest_pending_age_seconds),
      ),
      h('dt', null, 'Last minute'),
      h(
        'dd',
        null,
        ks
          ? `${ks.delivered_last_minute} ${card.kind === 'inbox' ? 'handled' : 'delivered'}, ${ks.failed_last_minute} failed, ${ks.attempts_last_minute} attempts`
          : '—',
      ),
    ),
    h('div', { class: 'charts', role: 'group', 'aria-label': 'Last 15 minutes' }, charts),
  );
}

function botRow(b: BotStats): HTMLElement {
  const readiness = b.ready === null ? 'unknown' : b.ready ? 'ready' : 'not ready';
  return h(
    'tr',
    null,
    h('th', { scope: 'row' }, h('code', null, b.bot_id)),
    h('td', null, b.lease_owner ?? '—', b.lease_valid ? '' : h('span', { class: 'muted' }, ' (lease expired)')),
    h('td', { class: 'num' }, b.lease_generation),
    h(
      'td',
      null,
      h('span', { class: `badge ${b.ready ? 'state-delivered' : b.ready === false ? 'state-failed' : ''}` }, readiness),
      b.reasons.length ? h('div', { class: 'muted small' }, b.reasons.join('; ')) : null,
    ),
    h(
      'td',
      null,
      b.progress_at ? `${fmtAge(b.progress_age_seconds)} ago (gen ${b.progress_generation ?? '—'})` : 'never',
    ),
    h('td', { class: 'num' }, b.next_offset),
    h('td', { class: 'num' }, b.pending_update_count === null ? '—' : b.pending_update_count),
    h('td', null, b.halted_reason ? h('span', { class: 'error-text' }, b.halted_reason) : '—'),
  );
}

export function overviewView(ctx: ViewContext): View {
  const cards = h('div', { class: 'cards' });
  const bots = h('div');
  const quarantine = h('div');
  const recoverStatus = statusRegion();
  const sendStatus = statusRegion();

  const olderThan = h('input', {
    id: 'recover-older-than',
    name: 'older_than',
    type: 'text',
    placeholder: 'STALE_AFTER',
    pattern: '^[0-9]+(ms|s|m|h)?$',
    size: 8,
    autocomplete: 'off',
  });
  const recoverForm = h(
    'form',
    { class: 'inline-form', 'aria-labelledby': 'recover-title' },
    h('h3', { id: 'recover-title' }, 'Recover stale deliveries'),
    h('p', { class: 'muted small' }, 'Return work whose worker stopped heartbeating to pending now.'),
    h('p', { class: 'field' }, h('label', { for: olderThan.id }, 'No heartbeat for'), olderThan),
    h('button', { type: 'submit' }, 'Recover stale…'),
    recoverStatus,
  );
  const recoverStale = async (ev: SubmitEvent): Promise<void> => {
    ev.preventDefault();
    const older = olderThan.value.trim();
    const { confirmed, reason } = await confirmDialog({
      title: 'Recover stale deliveries?',
      body: [
        h(
          'p',
          null,
          `Work in delivering without a heartbeat for ${older || 'STALE_AFTER'} returns to pending and is delivered again.`,
        ),
      ],
      confirmLabel: 'Recover now',
      reason: true,
    });
    if (!confirmed) return;
    try {
      const r = await ctx.api.post<{ recovered: Record<string, number>; total: number; audit_id: number }>(
        'v1/recover-stale',
        {
          ...(older ? { older_than: older } : {}),
          ...(reason ? { reason } : {}),
        },
      );
      setStatus(
        recoverStatus,
        'ok',
        `Recovered ${r.total} (${Object.entries(r.recovered)
          .map(([k, n]) => `${k} ${n}`)
          .join(', ')}) — audit #${r.audit_id}`,
      );
      void view.refresh();
    } catch (err) {
      setStatus(recoverStatus, 'error', `Recover failed: ${describeError(err)}`);
    }
  };
  recoverForm.addEventListener('submit', (ev) => void recoverStale(ev));

  const chat = h('input', {
    id: 'send-chat',
    name: 'chat_id',
    type: 'text',
    required: true,
    pattern: '^(-?[0-9]{1,20}|@[A-Za-z0-9_]{4,64})$',
    size: 14,
    autocomplete: 'off',
  });
  const text = h('input', {
    id: 'send-text',
    name: 'text',
    type: 'text',
    required: true,
    maxlength: 4096,
    value: 'Test message from the tg-relay dashboard',
    autocomplete: 'off',
  });
  const sendForm = h(
    'form',
    { class: 'inline-form', 'aria-labelledby': 'send-title' },
    h('h3', { id: 'send-title' }, 'Send a test message'),
    h('p', { class: 'muted small' }, 'Enqueued as an outbound message (POST /v1/messages) with a fresh msg_id.'),
    h('p', { class: 'field' }, h('label', { for: chat.id }, 'Chat id'), chat),
    h('p', { class: 'field grow' }, h('label', { for: text.id }, 'Text'), text),
    h('button', { type: 'submit' }, 'Send'),
    sendStatus,
  );
  const sendMessage = async (ev: SubmitEvent): Promise<void> => {
    ev.preventDefault();
    const msgId = `dashboard-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    const chatValue = chat.value.trim();
    try {
      const r = await ctx.api.post<{ id: number; msg_id: string; state: string; audit_id: number }>('v1/messages', {
        msg_id: msgId,
        chat_id: /^-?[0-9]+$/.test(chatValue) ? Number(chatValue) : chatValue,
        text: text.value,
      });
      setStatus(
        sendStatus,
        'ok',
        'Enqueued ',
        h('a', { href: detailHash('outbound', r.id) }, `outbound #${r.id}`),
        ` (${r.msg_id}), ${r.state} — audit #${r.audit_id}`,
      );
    } catch (err) {
      setStatus(sendStatus, 'error', `Not sent: ${describeError(err)}`);
    }
  };
  sendForm.addEventListener('submit', (ev) => void sendMessage(ev));

  const el = h(
    'div',
    { class: 'overview' },
    h('div', { class: 'page-head' }, h('h1', { tabindex: -1 }, 'Overview')),
    cards,
    h('section', { 'aria-labelledby': 'bots-title' }, h('h2', { id: 'bots-title' }, 'Pollers'), bots),
    h(
      'div',
      { class: 'two-col' },
      h('section', { 'aria-labelledby': 'q-title' }, h('h2', { id: 'q-title' }, 'Quarantine'), quarantine),
      h(
        'section',
        { class: 'actions', 'aria-labelledby': 'actions-title' },
        h('h2', { id: 'actions-title' }, 'Actions'),
        recoverForm,
        sendForm,
      ),
    ),
  );

  const view: View = {
    title: 'Overview',
    el,
    async refresh() {
      const [stats, series] = await Promise.all([
        ctx.api.get<Stats>('v1/stats'),
        ctx.api.get<AttemptTimeseries>('v1/stats/timeseries', { minutes: 15 }).catch(() => null),
      ]);
      replaceKeepingFocus(
        cards,
        WORK_CARDS.map((c) => workCard(stats, series, c)),
      );
      replaceKeepingFocus(
        bots,
        stats.bots.length === 0
          ? h('p', { class: 'muted' }, 'No poller has run yet (relay.cursor is empty).')
          : h(
              'table',
              { class: 'grid' },
              h('caption', { class: 'visually-hidden' }, 'Pollers per bot'),
              h(
                'thead',
                null,
                h(
                  'tr',
                  null,
                  [
                    'Bot',
                    'Lease owner',
                    'Generation',
                    'Readiness',
                    'Last progress',
                    'Next offset',
                    'Lag (Telegram)',
                    'Halted',
                  ].map((t) => h('th', { scope: 'col' }, t)),
                ),
              ),
              h('tbody', null, stats.bots.map(botRow)),
            ),
      );
      replaceKeepingFocus(
        quarantine,
        h(
          'ul',
          { class: 'plain' },
          KIND_VIEWS.quarantine.states.map((s) => {
            const c = stats.quarantine.states[s] ?? { count: 0, approximate: false };
            return h(
              'li',
              null,
              stateBadge(s),
              ' ',
              h(
                'a',
                {
                  href: listHash('quarantine', { state: s }),
                  'data-kind': 'quarantine',
                  'data-state': s,
                  'data-count': c.count,
                  'data-focus-key': `q-${s}`,
                },
                fmtCount(c.count, c.approximate),
              ),
            );
          }),
        ),
      );
    },
  };
  return view;
}
