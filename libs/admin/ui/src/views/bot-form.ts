import { ApiError, describeError } from '../api';
import { h, setStatus, statusRegion } from '../dom';
import { botHash } from '../router';
import type { Bot } from '../../api-types';
import type { View, ViewContext } from '../view';

/** `NAME=value` per line (blank lines skipped) as the API's settings object. */
function parseSettings(textValue: string): Record<string, string> {
  const out: Record<string, string> = {};
  textValue.split('\n').forEach((line, i) => {
    const l = line.trim();
    if (!l) return;
    const eq = l.indexOf('=');
    if (eq <= 0) throw new Error(`Settings, line ${i + 1}: expected NAME=value`);
    out[l.slice(0, eq).trim()] = l.slice(eq + 1).trim();
  });
  return out;
}

/** `body.settings/OUTBOUND_RATE_PER_BOT` (a schema violation) or `settings` (the registry's check) → `settings`. */
const fieldName = (f: unknown) => (typeof f === 'string' ? f.replace(/^body\./, '').split(/[./]/)[0] : undefined);

/**
 * POST /v1/bots: register a bot, or change a registration (`?id=` fills the form in with it).
 * The token goes into the request only: the field is emptied as the request leaves, whatever the
 * answer, and it is never shown, kept or put in a URL.
 */
export function botAddView(ctx: ViewContext, params: URLSearchParams): View {
  const changing = params.get('id');
  const input = (id: string, name: string, attrs: Record<string, string | number | boolean> = {}) =>
    h('input', { id, name, type: 'text', autocomplete: 'off', spellcheck: 'false', ...attrs });
  const token = input('bot-token', 'token', { type: 'password', required: true, maxlength: 300, size: 50 });
  const handlers = input('bot-handlers', 'handlers', { maxlength: 1000, placeholder: 'handlers/shop-bot.ts' });
  const captureUrl = input('bot-capture-url', 'capture_url', {
    inputmode: 'url',
    maxlength: 2000,
    placeholder: 'https://collector.example/telegram',
  });
  const allowed = h('textarea', { id: 'bot-allowed', name: 'allowed_chat_ids', rows: 2, spellcheck: 'false' });
  const ops = input('bot-ops-chat', 'ops_chat_id', { maxlength: 100, size: 20 });
  const settings = h('textarea', {
    id: 'bot-settings',
    name: 'settings',
    rows: 3,
    spellcheck: 'false',
    placeholder: 'OUTBOUND_RATE_PER_BOT=30/1s',
  });
  const enabled = h('input', { id: 'bot-enabled', name: 'enabled', type: 'checkbox', checked: true });
  const reason = input('bot-reason', 'reason', { maxlength: 500 });
  const fields: Record<string, HTMLInputElement | HTMLTextAreaElement> = {
    token,
    handlers,
    capture_url: captureUrl,
    allowed_chat_ids: allowed,
    ops_chat_id: ops,
    settings,
    enabled,
    reason,
  };
  const status = statusRegion();
  const button = h('button', { type: 'submit', class: 'primary' }, changing ? 'Save registration' : 'Add bot');
  const field = (el: HTMLElement & { id: string }, label: string, hint?: string) =>
    h(
      'p',
      { class: 'field' },
      h('label', { for: el.id }, label),
      el,
      hint ? h('span', { class: 'muted small', id: `${el.id}-hint` }, hint) : null,
    );
  for (const [el, hint] of [
    [token, 'bot-token-hint'],
    [allowed, 'bot-allowed-hint'],
    [settings, 'bot-settings-hint'],
  ] as const)
    el.setAttribute('aria-describedby', hint);

  // method=post: were the handler ever missing, a GET would put the token in the page URL
  const form = h(
    'form',
    { class: 'stacked-form', method: 'post', autocomplete: 'off', 'aria-label': changing ? 'Change bot' : 'Add bot' },
    field(
      token,
      'Token (from @BotFather)',
      'Checked with getMe and stored encrypted. It is never shown again, and this field is emptied when the request is sent: type it again to retry.',
    ),
    field(handlers, 'Handlers module (optional)'),
    field(captureUrl, 'Capture URL (optional)'),
    field(
      allowed,
      'Allowed chat ids (optional)',
      'Separated by commas, spaces or lines; none lets every chat through.',
    ),
    field(ops, 'Operators’ chat id (optional)'),
    field(
      settings,
      'Settings (optional)',
      'NAME=value per line: OUTBOUND_RATE_PER_BOT, OUTBOUND_RATE_PER_CHAT, OUTBOUND_RATE_PER_GROUP, PAID_BROADCAST_RATE, HANDLER_TIMEOUT.',
    ),
    h(
      'p',
      { class: 'field check-field' },
      h('label', { for: enabled.id, class: 'check' }, enabled, ' Enabled: serve it now'),
    ),
    field(reason, 'Reason (optional, kept in the audit trail)'),
    h('p', { class: 'field buttons' }, button),
    status,
  );

  function markInvalid(name: string | undefined): void {
    for (const el of Object.values(fields)) el.removeAttribute('aria-invalid');
    const el = name ? fields[name] : undefined;
    if (!el) return;
    el.setAttribute('aria-invalid', 'true');
    el.focus();
  }

  const submit = async (ev: SubmitEvent): Promise<void> => {
    ev.preventDefault();
    let settingsValue: Record<string, string>;
    try {
      settingsValue = parseSettings(settings.value);
    } catch (err) {
      setStatus(status, 'error', (err as Error).message);
      markInvalid('settings');
      return;
    }
    const body = {
      token: token.value.trim(),
      handlers: handlers.value.trim() || null,
      capture_url: captureUrl.value.trim() || null,
      allowed_chat_ids: allowed.value.split(/[\s,]+/).filter(Boolean),
      ops_chat_id: ops.value.trim() || null,
      enabled: enabled.checked,
      settings: settingsValue,
      ...(reason.value.trim() ? { reason: reason.value.trim() } : {}),
    };
    // the request holds the only copy from here on (post serialises the body before it awaits)
    const request = ctx.api.post<Bot>('v1/bots', body);
    token.value = '';
    body.token = '';
    button.disabled = true;
    setStatus(status, 'info', 'Checking the token with getMe…');
    try {
      const b = await request;
      markInvalid(undefined);
      setStatus(
        status,
        'ok',
        // version 1 is a new row (a bot removed and added again starts over)
        `${b.version === 1 ? 'Added' : 'Updated'} bot ${b.id}${b.username ? ` (@${b.username})` : ''}, ${b.enabled ? 'enabled' : 'disabled'}: `,
        h('a', { href: botHash(b.id) }, 'see its page'),
      );
      if (!changing) form.reset();
    } catch (err) {
      const name = err instanceof ApiError ? fieldName(err.body.field) : undefined;
      setStatus(status, 'error', `Not registered: ${describeError(err)}${name ? ` — field ${name}` : ''}`);
      markInvalid(name ?? 'token');
    } finally {
      button.disabled = false;
    }
  };
  form.addEventListener('submit', (ev) => void submit(ev));

  const heading = h('h1', { tabindex: -1 }, changing ? `Change bot ${changing}` : 'Add a bot');
  const intro = h(
    'p',
    { class: 'muted small' },
    changing
      ? 'Saving replaces the whole registration with this form (POST /v1/bots), so it starts from the current one. The token is needed again.'
      : 'POST /v1/bots: a new bot is added, the token of a registered bot replaces its registration. Needs TOKEN_ENCRYPTION_KEY on the admin API.',
  );
  const el = h(
    'div',
    null,
    h(
      'p',
      { class: 'crumbs' },
      h('a', { href: changing ? botHash(changing) : '#/bots' }, changing ? '← Bot' : '← Bots'),
    ),
    h('div', { class: 'page-head' }, heading, intro),
    form,
  );

  let filled = !changing;
  return {
    title: changing ? `Change bot ${changing}` : 'Add a bot',
    el,
    // nothing here moves by itself: the registration is read once, so live refresh never overwrites typing
    async refresh() {
      if (filled || !changing) return;
      let b: Bot;
      try {
        b = await ctx.api.get<Bot>(`v1/bots/${changing}`);
      } catch (err) {
        setStatus(status, 'error', `Could not read bot ${changing}: ${describeError(err)}`);
        return;
      }
      filled = true;
      handlers.value = b.handlers ?? '';
      captureUrl.value = b.capture_url ?? '';
      allowed.value = b.allowed_chat_ids.join(', ');
      ops.value = b.ops_chat_id ?? '';
      settings.value = Object.entries(b.settings)
        .map(([k, v]) => `${k}=${v}`)
        .join('\n');
      enabled.checked = b.enabled;
    },
  };
}
