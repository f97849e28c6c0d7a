import { ApiError, describeError } from '../api';
import { confirmDialog } from '../dialog';
import { Child, h, replaceKeepingFocus, setStatus, statusRegion } from '../dom';
import { fmtCount, fmtTime } from '../format';
import { stateBadge } from '../kinds';
import { botChangeHash, botHash } from '../router';
import type { Bot } from '../../api-types';
import type { View, ViewContext } from '../view';

/** The chat ids a detail page lists before it only counts the rest (an allow-list may hold 10,000). */
const SHOWN_CHATS = 50;

const dash = () => h('span', { class: 'muted' }, '—');
const orDash = (v: string | null, code = false): Child => (v === null ? dash() : code ? h('code', null, v) : v);
const botName = (b: Bot) => (b.username ? `@${b.username}` : `bot ${b.id}`);
const enabledBadge = (b: Bot) => stateBadge(b.enabled ? 'enabled' : 'disabled');
const time = (iso: string) => h('time', { datetime: iso, title: iso }, fmtTime(iso));

/** An empty allow-list lets every chat through (as ALLOWED_CHAT_IDS does). */
const allowList = (b: Bot) =>
  b.allowed_chat_ids.length === 0 ? 'all chats' : `${fmtCount(b.allowed_chat_ids.length)} chats`;

function settingsList(b: Bot): Child {
  const entries = Object.entries(b.settings);
  if (entries.length === 0) return dash();
  return h(
    'ul',
    { class: 'plain settings' },
    entries.map(([k, v]) => h('li', null, h('code', null, `${k}=${v}`))),
  );
}

type Action = 'disable' | 'enable' | 'remove';

const ACTIONS: Record<Action, { label: string; text: string; danger: boolean; applies: (b: Bot) => boolean }> = {
  disable: {
    label: 'Disable',
    text: 'Pollers and workers stop serving it within seconds. Its messages, sessions and audit rows stay; Enable brings it back.',
    danger: true,
    applies: (b) => b.enabled,
  },
  enable: {
    label: 'Enable',
    text: 'Pollers and workers serve it again within seconds.',
    danger: false,
    applies: (b) => !b.enabled,
  },
  remove: {
    label: 'Remove',
    text: 'The bot leaves the registry with its encrypted token: adding it back needs the token again. Its messages, sessions and audit rows stay.',
    danger: true,
    applies: () => true,
  },
};

/** Confirms and sends one action; its answer or refusal (with its code) goes to `status`. */
async function act(ctx: ViewContext, b: Bot, action: Action, status: HTMLElement): Promise<boolean> {
  const copy = ACTIONS[action];
  const { confirmed, reason } = await confirmDialog({
    title: `${copy.label} ${botName(b)} (${b.id})?`,
    body: [h('p', null, copy.text)],
    confirmLabel: `${copy.label} bot`,
    reason: true,
    danger: copy.danger,
  });
  if (!confirmed) return false;
  const body = reason ? { reason } : {};
  try {
    if (action === 'remove') {
      await ctx.api.delete(`v1/bots/${b.id}`, body);
      setStatus(status, 'ok', `Remove: done — bot ${b.id} is no longer registered`);
    } else {
      const r = await ctx.api.post<Bot>(`v1/bots/${b.id}/${action}`, body);
      setStatus(status, 'ok', `${copy.label}: done — bot ${r.id} is now ${r.enabled ? 'enabled' : 'disabled'}`);
    }
  } catch (err) {
    setStatus(status, 'error', `${copy.label} refused: ${describeError(err)}`);
  }
  return true;
}

function actionButtons(b: Bot, run: (a: Action) => void): HTMLElement[] {
  return (Object.keys(ACTIONS) as Action[])
    .filter((a) => ACTIONS[a].applies(b))
    .map((a) =>
      h(
        'button',
        {
          type: 'button',
          class: ACTIONS[a].danger ? 'danger' : 'primary',
          'data-focus-key': `${a}-${b.id}`,
          'aria-label': `${ACTIONS[a].label} bot ${b.id}…`,
          onclick: () => run(a),
        },
        `${ACTIONS[a].label}…`,
      ),
    );
}

const COLUMNS = [
  'Bot',
  'Username',
  'State',
  'Handlers',
  'Capture URL',
  'Allow-list',
  'Ops chat',
  'Settings',
  'Updated',
  'Actions',
];

/** GET /v1/bots: the registry, with enable/disable and remove on each row. */
export function botsView(ctx: ViewContext): View {
  const box = h('div', { class: 'table-box' });
  const status = statusRegion();
  const el = h(
    'div',
    null,
    h(
      'div',
      { class: 'page-head' },
      h('h1', { tabindex: -1 }, 'Bots'),
      h('p', { class: 'muted small' }, 'The registered bots (relay.bots) that fleet processes serve.'),
    ),
    h('div', { class: 'toolbar' }, h('a', { href: '#/bots/add', class: 'button primary' }, 'Add a bot…'), status),
    box,
  );

  const run = (b: Bot, a: Action) => void act(ctx, b, a, status).then((done) => (done ? view.refresh() : undefined));

  const view: View = {
    title: 'Bots',
    el,
    async refresh() {
      let items: Bot[];
      try {
        ({ items } = await ctx.api.get<{ items: Bot[] }>('v1/bots'));
      } catch (err) {
        replaceKeepingFocus(box, h('p', { role: 'alert', class: 'error' }, describeError(err)));
        return;
      }
      const rows = items.map((b) =>
        h(
          'tr',
          { 'data-bot': b.id },
          h('td', null, h('a', { href: botHash(b.id), 'data-focus-key': `b-${b.id}` }, b.id)),
          h('td', { class: 'username' }, b.username === null ? dash() : `@${b.username}`),
          h('td', null, enabledBadge(b)),
          h('td', null, orDash(b.handlers, true)),
          h('td', null, orDash(b.capture_url, true)),
          h('td', null, allowList(b)),
          h('td', null, orDash(b.ops_chat_id)),
          h('td', null, settingsList(b)),
          h('td', null, time(b.updated_at)),
          h(
            'td',
            { class: 'row-actions' },
            actionButtons(b, (a) => run(b, a)),
          ),
        ),
      );
      replaceKeepingFocus(
        box,
        rows.length === 0
          ? h('p', { class: 'empty' }, 'No bot is registered: add one here, or with `tg-relay bots add`.')
          : h(
              'table',
              { class: 'grid' },
              h('caption', { class: 'visually-hidden' }, 'Registered bots'),
              h(
                'thead',
                null,
                h(
                  'tr',
                  null,
                  COLUMNS.map((t) => h('th', { scope: 'col' }, t)),
                ),
              ),
              h('tbody', null, rows),
            ),
      );
    },
  };
  return view;
}

function meta(rows: [string, Child][]): HTMLElement {
  return h(
    'dl',
    { class: 'meta' },
    rows.map(([label, v]) => [h('dt', null, label), h('dd', null, v)]),
  );
}

function chatList(ids: string[]): Child {
  if (ids.length === 0) return 'all chats (no allow-list)';
  const more = ids.length - SHOWN_CHATS;
  return [ids.slice(0, SHOWN_CHATS).join(', '), more > 0 ? ` … and ${fmtCount(more)} more` : null];
}

/** GET /v1/bots/:id with its actions. */
export function botView(ctx: ViewContext, id: string): View {
  const badge = h('span');
  const actions = h('div', { class: 'toolbar', role: 'group', 'aria-label': 'Actions' });
  const status = statusRegion();
  const facts = h('section', { 'aria-label': 'Registration' });
  const heading = h('h1', { tabindex: -1 }, `Bot ${id}`);

  function render(b: Bot): void {
    heading.textContent = b.username ? `Bot ${b.id} (@${b.username})` : `Bot ${b.id}`;
    replaceKeepingFocus(badge, enabledBadge(b));
    replaceKeepingFocus(
      actions,
      actionButtons(b, (a) => void act(ctx, b, a, status).then((done) => (done ? view.refresh() : undefined))),
      h('a', { href: botChangeHash(b.id), 'data-focus-key': 'change' }, 'Change its registration…'),
    );
    replaceKeepingFocus(
      facts,
      meta([
        ['id', b.id],
        ['username', b.username === null ? dash() : `@${b.username}`],
        ['enabled', b.enabled ? 'yes: pollers and workers serve it' : 'no: nothing serves it'],
        ['handlers', orDash(b.handlers, true)],
        ['capture URL', orDash(b.capture_url, true)],
        ['allowed chats', chatList(b.allowed_chat_ids)],
        ['operators’ chat', orDash(b.ops_chat_id)],
        ['settings', settingsList(b)],
        ['token', `stored encrypted (key ${b.token_key_id}); never shown`],
        ['version', String(b.version)],
        ['created', time(b.created_at)],
        ['updated', time(b.updated_at)],
      ]),
    );
  }

  const el = h(
    'div',
    { class: 'detail' },
    h('p', { class: 'crumbs' }, h('a', { href: '#/bots' }, '← Bots')),
    h('div', { class: 'page-head' }, heading, badge),
    actions,
    status,
    facts,
  );

  const view: View = {
    title: `Bot ${id}`,
    el,
    async refresh() {
      let b: Bot;
      try {
        b = await ctx.api.get<Bot>(`v1/bots/${id}`);
      } catch (err) {
        const msg = err instanceof ApiError && err.status === 404 ? `Bot ${id} is not registered.` : describeError(err);
        replaceKeepingFocus(badge);
        replaceKeepingFocus(actions);
        replaceKeepingFocus(facts, h('p', { role: 'alert', class: 'error' }, msg));
        return;
      }
      render(b);
    },
  };
  return view;
}
