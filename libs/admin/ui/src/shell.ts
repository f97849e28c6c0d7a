import { ApiError, Api, createApi, describeError } from './api';
import { dialogOpen } from './dialog';
import { h } from './dom';
import { fmtTime } from './format';
import { KIND_VIEWS } from './kinds';
import { LIST_KINDS, parseHash, Route } from './router';
import type { SandboxInfo } from '../api-types';
import type { View, ViewContext } from './view';
import { auditView } from './views/audit';
import { botAddView } from './views/bot-form';
import { botsView, botView } from './views/bots';
import { broadcastView, broadcastsView } from './views/broadcasts';
import { detailView } from './views/detail';
import { listView } from './views/list';
import { loginView } from './views/login';
import { overviewView } from './views/overview';
import { sandboxView } from './views/sandbox';

const TOKEN_KEY = 'tg-relay-admin-token';
const LIVE_KEY = 'tg-relay-admin-live';
export const REFRESH_MS_DEFAULT = 5000;

/** `?refresh=1000` on the page URL changes the live refresh period (at least 500 ms). */
function refreshMs(): number {
  const v = Number(new URLSearchParams(location.search).get('refresh'));
  return Number.isFinite(v) && v >= 500 ? v : REFRESH_MS_DEFAULT;
}

export function startApp(root: HTMLElement): void {
  let api: Api | null = null;
  let sandbox: SandboxInfo | null = null;
  let view: View | null = null;
  let timer: ReturnType<typeof setInterval> | undefined;
  let inFlight = false;
  const period = refreshMs();

  const main = h('main', { id: 'main', tabindex: -1 });
  const banner = h('p', { role: 'status', class: 'banner', hidden: true });
  const lastRefresh = h('span', { class: 'muted small' });
  const live = h('input', { id: 'live', type: 'checkbox', checked: sessionStorage.getItem(LIVE_KEY) !== 'off' });
  live.addEventListener('change', () => sessionStorage.setItem(LIVE_KEY, live.checked ? 'on' : 'off'));
  const nav = h('ul', { class: 'nav' });

  function signOut(message?: string): void {
    sessionStorage.removeItem(TOKEN_KEY);
    api = null;
    view?.dispose?.();
    view = null;
    if (timer) clearInterval(timer);
    timer = undefined;
    root.replaceChildren(
      h(
        'main',
        { id: 'main', class: 'login-page' },
        loginView({
          message,
          onSubmit: async (token) => {
            if (!token) return 'Enter the admin token.';
            try {
              await signIn(token);
              return null;
            } catch (err) {
              if (err instanceof ApiError && err.status === 401)
                return 'That token was refused by the admin API (401). Check ADMIN_TOKEN.';
              return `Could not reach the admin API: ${describeError(err)}`;
            }
          },
        }),
      ),
    );
    document.title = 'Sign in · tg-relay';
  }

  async function signIn(token: string): Promise<void> {
    let refused = false;
    const candidate = createApi(token, () => {
      refused = true;
      if (api) signOut('The admin API refused the token (401): sign in again.');
    });
    await candidate.get('v1/stats');
    if (refused) throw new ApiError(401, 'RELAY_ADMIN_UNAUTHORIZED', 'refused');
    sessionStorage.setItem(TOKEN_KEY, token);
    api = candidate;
    sandbox = await candidate.get<SandboxInfo>('v1/sandbox').catch(() => null);
    renderShell();
    route();
    timer = setInterval(() => void tick(), period);
  }

  function renderShell(): void {
    const links: [string, string][] = [
      ['#/overview', 'Overview'],
      ...LIST_KINDS.map((k): [string, string] => [`#/${k}`, KIND_VIEWS[k].title]),
      ['#/broadcasts', 'Broadcasts'],
      ['#/bots', 'Bots'],
      ['#/audit', 'Audit'],
    ];
    if (sandbox) links.push(['#/sandbox', 'Sandbox chat']);
    nav.replaceChildren(...links.map(([href, label]) => h('li', null, h('a', { href }, label))));
    root.replaceChildren(
      h(
        'a',
        { class: 'skip', href: '#main', onclick: (ev: Event) => (ev.preventDefault(), main.focus()) },
        'Skip to content',
      ),
      h(
        'header',
        { class: 'top' },
        h('p', { class: 'brand' }, 'tg-relay', sandbox ? h('span', { class: 'badge sandbox' }, 'sandbox mode') : null),
        h('nav', { 'aria-label': 'Main' }, nav),
        h(
          'div',
          { class: 'session' },
          h('label', { for: live.id, class: 'check' }, live, ` Live (${period / 1000} s)`),
          lastRefresh,
          h('button', { type: 'button', onclick: () => signOut() }, 'Sign out'),
        ),
      ),
      banner,
      main,
    );
  }

  function viewFor(r: Route, ctx: ViewContext): View {
    switch (r.name) {
      case 'list':
        return listView(ctx, r.kind, r.params);
      case 'detail':
        return detailView(ctx, r.kind, r.id);
      case 'audit':
        return auditView(ctx, r.params);
      case 'broadcasts':
        return broadcastsView(ctx, r.params);
      case 'broadcast':
        return broadcastView(ctx, r.id);
      case 'bots':
        return botsView(ctx);
      case 'bot':
        return botView(ctx, r.id);
      case 'bot-add':
        return botAddView(ctx, r.params);
      case 'sandbox':
        if (ctx.sandbox) return sandboxView(ctx);
        break;
      default:
        break;
    }
    return overviewView(ctx);
  }

  function route(): void {
    if (!api) return;
    const hash = location.hash;
    if (hash && !hash.startsWith('#/')) return; // an in-page anchor, not a page
    const r = parseHash(hash);
    view?.dispose?.();
    const ctx: ViewContext = {
      api,
      sandbox,
      navigate: (to) => (location.hash === to ? void load() : void (location.hash = to)),
    };
    view = viewFor(r, ctx);
    const current = `#/${hash.replace(/^#\//, '').split(/[/?]/)[0] || 'overview'}`;
    for (const a of nav.querySelectorAll('a')) {
      if (a.getAttribute('href') === current) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
    main.replaceChildren(view.el);
    document.title = `${view.title} · tg-relay`;
    void load().then(() => view?.el.querySelector<HTMLElement>('h1')?.focus({ preventScroll: true }));
  }

  async function load(): Promise<void> {
    const v = view;
    if (!v) return;
    inFlight = true;
    try {
      await v.refresh();
      banner.hidden = true;
      lastRefresh.textContent = `updated ${fmtTime(new Date().toISOString())}`;
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return;
      banner.hidden = false;
      banner.textContent = `Refresh failed: ${describeError(err)}`;
    } finally {
      inFlight = false;
    }
  }

  async function tick(): Promise<void> {
    if (!live.checked || inFlight || document.hidden || dialogOpen() || view?.busy?.()) return;
    await load();
  }

  window.addEventListener('hashchange', route);
  const saved = sessionStorage.getItem(TOKEN_KEY);
  if (saved) {
    signIn(saved).catch((err) =>
      signOut(
        err instanceof ApiError && err.status === 401
          ? 'The saved token was refused (401): sign in again.'
          : `Could not reach the admin API: ${describeError(err)}`,
      ),
    );
  } else {
    signOut();
  }
}
