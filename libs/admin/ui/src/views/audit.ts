import { describeError } from '../api';
import { h, replaceKeepingFocus } from '../dom';
import { fmtTime, text } from '../format';
import { detailHash, LIST_KINDS } from '../router';
import type { AuditRow, Page } from '../../api-types';
import type { View, ViewContext } from '../view';

function subject(a: AuditRow): HTMLElement | string {
  const d = (a.details ?? {}) as Record<string, unknown>;
  const kind = LIST_KINDS.find((k) => k === d.kind);
  if (kind && a.subject_id) return h('a', { href: detailHash(kind, a.subject_id) }, `${kind} #${a.subject_id}`);
  if (kind) return `${kind}${d.count !== undefined ? ` (${text(d.count)})` : ''}`;
  return a.subject_key ?? '—';
}

/** GET /v1/audit: every admin action, newest first. */
export function auditView(ctx: ViewContext, params: URLSearchParams): View {
  const cursor = params.get('cursor') ?? undefined;
  const box = h('div', { class: 'table-box' });
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages' });
  const el = h(
    'div',
    null,
    h(
      'div',
      { class: 'page-head' },
      h('h1', { tabindex: -1 }, 'Audit trail'),
      h('p', { class: 'muted small' }, 'Admin actions (relay.attempts, subject admin), newest first.'),
    ),
    box,
    pager,
  );
  return {
    title: 'Audit',
    el,
    async refresh() {
      let page: Page<AuditRow>;
      try {
        page = await ctx.api.get<Page<AuditRow>>('v1/audit', { limit: 50, cursor });
      } catch (err) {
        replaceKeepingFocus(box, h('p', { role: 'alert', class: 'error' }, describeError(err)));
        return;
      }
      const rows = page.items.map((a) => {
        const d = (a.details ?? {}) as Record<string, unknown>;
        return h(
          'tr',
          null,
          h('td', null, h('time', { datetime: a.started_at, title: a.started_at }, fmtTime(a.started_at))),
          h('td', null, h('span', { class: 'badge admin' }, a.action)),
          h('td', null, a.actor ?? '—'),
          h('td', null, subject(a)),
          h(
            'td',
            null,
            d.result === 'refused'
              ? h('span', { class: 'error-text' }, `refused: ${a.error_code ?? ''} ${a.error ?? ''}`)
              : text(d.result ?? 'ok'),
          ),
          h('td', null, d.reason ? text(d.reason) : '—'),
        );
      });
      replaceKeepingFocus(
        box,
        rows.length === 0
          ? h('p', { class: 'empty' }, 'No admin action yet.')
          : h(
              'table',
              { class: 'grid' },
              h('caption', { class: 'visually-hidden' }, 'Admin actions, newest first'),
              h(
                'thead',
                null,
                h(
                  'tr',
                  null,
                  ['Time', 'Action', 'By', 'Subject', 'Result', 'Reason'].map((t) => h('th', { scope: 'col' }, t)),
                ),
              ),
              h('tbody', null, rows),
            ),
      );
      replaceKeepingFocus(
        pager,
        cursor ? h('a', { href: '#/audit', 'data-focus-key': 'first' }, '« Newest') : null,
        page.next_cursor
          ? h(
              'a',
              { href: `#/audit?cursor=${encodeURIComponent(page.next_cursor)}`, 'data-focus-key': 'next' },
              'Older »',
            )
          : null,
      );
    },
  };
}
