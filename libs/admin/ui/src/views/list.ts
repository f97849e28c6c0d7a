import { describeError } from '../api';
import { confirmDialog } from '../dialog';
import { h, replaceKeepingFocus, setStatus, statusRegion } from '../dom';
import { isoToLocalInput, localInputToIso } from '../format';
import { KIND_VIEWS } from '../kinds';
import { detailHash, listHash } from '../router';
import type { BulkRetryResult, ListKind, Page, Summaries } from '../../api-types';
import type { View, ViewContext } from '../view';
// the relayed Bot API methods (a dependency-free table): the outbound list's method filter
import { RELAYED_METHODS } from '../../../../telegram/methods';

const FILTER_KEYS = ['state', 'chat', 'method', 'since', 'until', 'error', 'limit'] as const;
const PAGE_SIZES = ['25', '50', '100', '200'];

/** The list's filter as the API takes it (`state`, `chat`, `method`, `since`, `until`, `error`, `limit`, `cursor`). */
function filterOf(params: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of [...FILTER_KEYS, 'cursor']) {
    const v = params.get(k);
    if (v) out[k] = v;
  }
  return out;
}

function describeFilter(f: Record<string, string>): string {
  const parts = [
    f.chat && `chat ${f.chat}`,
    f.method && `method ${f.method}`,
    f.since && `since ${new Date(f.since).toLocaleString()}`,
    f.until && `until ${new Date(f.until).toLocaleString()}`,
    f.error && `error contains “${f.error}”`,
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : 'no other filter';
}

export function listView<K extends ListKind>(ctx: ViewContext, kind: K, params: URLSearchParams): View {
  const spec = KIND_VIEWS[kind];
  const filter = filterOf(params);
  const id = (s: string) => `f-${kind}-${s}`;

  const state = h(
    'select',
    { id: id('state'), name: 'state' },
    h('option', { value: '' }, 'any'),
    spec.states.map((s) => h('option', { value: s, selected: filter.state === s }, s)),
  );
  const chat = spec.chat
    ? h('input', {
        id: id('chat'),
        name: 'chat',
        type: 'text',
        inputmode: 'numeric',
        size: 14,
        value: filter.chat ?? '',
        pattern: '^(-?[0-9]{1,20}|@[A-Za-z0-9_]{4,64})$',
        autocomplete: 'off',
      })
    : null;
  // outbound rows only: every row is sent with one of the relayed methods
  const method =
    kind === 'outbound'
      ? h(
          'select',
          { id: id('method'), name: 'method' },
          h('option', { value: '' }, 'any'),
          RELAYED_METHODS.map((m) => h('option', { value: m, selected: filter.method === m }, m)),
        )
      : null;
  const since = h('input', {
    id: id('since'),
    name: 'since',
    type: 'datetime-local',
    value: isoToLocalInput(filter.since ?? null),
  });
  const until = h('input', {
    id: id('until'),
    name: 'until',
    type: 'datetime-local',
    value: isoToLocalInput(filter.until ?? null),
  });
  const error = h('input', {
    id: id('error'),
    name: 'error',
    type: 'search',
    size: 18,
    maxlength: 200,
    value: filter.error ?? '',
    autocomplete: 'off',
  });
  const limit = h(
    'select',
    { id: id('limit'), name: 'limit' },
    PAGE_SIZES.map((n) => h('option', { value: n, selected: (filter.limit ?? '50') === n }, n)),
  );
  const field = (label: string, input: HTMLElement) =>
    h('p', { class: 'field' }, h('label', { for: input.id }, label), input);

  const form = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': `Filter ${spec.title.toLowerCase()}` },
    field('State', state),
    chat ? field('Chat', chat) : null,
    method ? field('Method', method) : null,
    field(`${spec.timeLabel} from`, since),
    field(`${spec.timeLabel} before`, until),
    field('Error contains', error),
    field('Per page', limit),
    h(
      'p',
      { class: 'field buttons' },
      h('button', { type: 'submit', class: 'primary' }, 'Apply'),
      h('button', { type: 'button', onclick: () => ctx.navigate(listHash(kind)) }, 'Clear'),
    ),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.navigate(
      listHash(kind, {
        state: state.value || undefined,
        chat: chat?.value.trim() || undefined,
        method: method?.value || undefined,
        since: localInputToIso(since.value),
        until: localInputToIso(until.value),
        error: error.value.trim() || undefined,
        limit: limit.value === '50' ? undefined : limit.value,
      }),
    );
  });

  const status = statusRegion();
  const summary = h('p', { class: 'muted small', 'aria-live': 'off' });
  const tableBox = h('div', { class: 'table-box' });
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages' });

  const bulkButton = spec.retry
    ? h(
        'button',
        { type: 'button', onclick: () => void bulkRetry() },
        filter.state && filter.state !== 'failed'
          ? 'Retry failed matching the other filters…'
          : 'Retry all failed matching this filter…',
      )
    : null;

  async function bulkRetry(): Promise<void> {
    const { state: _s, limit: _l, cursor: _c, ...rest } = filter;
    let dry: BulkRetryResult;
    try {
      dry = await ctx.api.post<BulkRetryResult>(`v1/${kind}/retry`, { ...rest, dry_run: true });
    } catch (err) {
      setStatus(status, 'error', `Could not count what would be retried: ${describeError(err)}`);
      return;
    }
    if (dry.matched === 0) {
      await confirmDialog({
        title: 'Nothing to retry',
        body: [h('p', null, `No failed ${spec.noun}s match (${describeFilter(rest)}).`)],
        confirmLabel: 'OK',
        inform: true,
      });
      return;
    }
    const { confirmed, reason } = await confirmDialog({
      title: `Retry ${dry.matched} failed ${spec.noun}${dry.matched === 1 ? '' : 's'}?`,
      body: [
        h(
          'p',
          { 'data-dry-run-count': dry.matched },
          `Dry run: ${dry.matched} failed ${spec.noun}${dry.matched === 1 ? '' : 's'} match (${describeFilter(rest)}).`,
        ),
        dry.more
          ? h(
              'p',
              { class: 'warn' },
              `More match than one call retries: only these ${dry.matched} now; run it again for the rest.`,
            )
          : null,
        h('p', null, 'They return to pending with a renewed attempt budget and are delivered again.'),
      ],
      confirmLabel: `Retry ${dry.matched}`,
      reason: true,
    });
    if (!confirmed) {
      setStatus(status, 'info', 'Bulk retry cancelled: nothing changed.');
      return;
    }
    try {
      const r = await ctx.api.post<BulkRetryResult>(`v1/${kind}/retry`, {
        ...rest,
        limit: dry.matched,
        ...(reason ? { reason } : {}),
      });
      setStatus(
        status,
        'ok',
        `Retried ${r.retried} ${spec.noun}${r.retried === 1 ? '' : 's'}${r.more ? ' (more remain)' : ''} — audit #${r.audit_id}`,
      );
      await view.refresh();
    } catch (err) {
      setStatus(status, 'error', `Bulk retry failed: ${describeError(err)}`);
    }
  }

  const openRow = (rowId: number) => ctx.navigate(detailHash(kind, rowId));

  const el = h(
    'div',
    { class: 'list' },
    h('div', { class: 'page-head' }, h('h1', { tabindex: -1 }, spec.title), summary),
    form,
    h('div', { class: 'toolbar' }, bulkButton, status),
    tableBox,
    pager,
  );

  const view: View = {
    title: spec.title,
    el,
    async refresh() {
      let page: Page<Summaries[K]>;
      try {
        page = await ctx.api.get<Page<Summaries[K]>>(`v1/${kind}`, filter);
      } catch (err) {
        replaceKeepingFocus(tableBox, h('p', { role: 'alert', class: 'error' }, describeError(err)));
        return;
      }
      summary.textContent = `${page.items.length} shown${page.next_cursor ? ', more on the next page' : ''}${filter.cursor ? ' (not the first page)' : ''}, newest first`;
      const rows = page.items.map((row) => {
        const rid = (row as { id: number }).id;
        const tr = h(
          'tr',
          { 'data-id': rid, class: 'clickable' },
          h(
            'td',
            { class: 'num' },
            h(
              'a',
              { href: detailHash(kind, rid), 'data-focus-key': `row-${rid}`, 'aria-label': `Open ${spec.noun} ${rid}` },
              `#${rid}`,
            ),
          ),
          spec.columns.map((c) => h('td', { class: c.num ? 'num' : '' }, c.cell(row))),
        );
        tr.addEventListener('click', (ev) => {
          if ((ev.target as HTMLElement).closest('a, button')) return;
          if (window.getSelection()?.toString()) return; // selecting text is not a click
          openRow(rid);
        });
        return tr;
      });
      replaceKeepingFocus(
        tableBox,
        page.items.length === 0
          ? h('p', { class: 'empty' }, `No ${spec.noun}s match.`)
          : h(
              'table',
              { class: 'grid', 'aria-describedby': summary.id || undefined },
              h('caption', { class: 'visually-hidden' }, `${spec.title}, newest first`),
              h(
                'thead',
                null,
                h(
                  'tr',
                  null,
                  h('th', { scope: 'col' }, 'Id'),
                  spec.columns.map((c) => h('th', { scope: 'col', class: c.num ? 'num' : '' }, c.label)),
                ),
              ),
              h('tbody', null, rows),
            ),
      );
      const here = new URLSearchParams(filter);
      here.delete('cursor');
      const next = new URLSearchParams(here);
      if (page.next_cursor) next.set('cursor', page.next_cursor);
      replaceKeepingFocus(
        pager,
        filter.cursor ? h('a', { href: listHash(kind, here), 'data-focus-key': 'first' }, '« First page') : null,
        page.next_cursor ? h('a', { href: listHash(kind, next), 'data-focus-key': 'next' }, 'Next page »') : null,
      );
    },
  };
  return view;
}
