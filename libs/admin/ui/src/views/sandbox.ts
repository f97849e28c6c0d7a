import { describeError } from '../api';
import { h, replaceKeepingFocus, setStatus, statusRegion } from '../dom';
import { fmtTime } from '../format';
import { stateBadge } from '../kinds';
import { detailHash } from '../router';
import type { Page, Summaries } from '../../api-types';
import type { View, ViewContext } from '../view';

interface Sent {
  update_id: number;
  chat_id: number;
  message_id: number;
  text: string;
  at: string;
  inbox?: Summaries['inbox'];
  capture?: Summaries['captures'];
}

interface BotMessage {
  message_id: number;
  text: string;
  reply_to_message_id: number | null;
  sent_at: string;
}

/** What this browser tab sent, so the conversation survives navigating away and back. */
const sentByTab: Sent[] = [];

/**
 * Sandbox mode: write as a Telegram user to the bot and watch the message flow through the relay
 * (inbox → dispatch, capture → collector, the bot's reply → outbound → the chat).
 */
export function sandboxView(ctx: ViewContext): View {
  const info = ctx.sandbox!;
  const chat = h('input', {
    id: 'sb-chat',
    name: 'chat_id',
    type: 'number',
    min: 1,
    value: info.chat_id,
    required: true,
  });
  const text = h('input', {
    id: 'sb-text',
    name: 'text',
    type: 'text',
    maxlength: 4096,
    autocomplete: 'off',
    placeholder: 'Write a message as the user…',
  });
  const status = statusRegion();
  const log = h('ol', { class: 'chat-log', role: 'log', 'aria-live': 'polite', 'aria-label': 'Conversation' });
  const form = h(
    'form',
    { class: 'chat-form', 'aria-label': 'Send a message as a user' },
    h('p', { class: 'field' }, h('label', { for: chat.id }, 'From chat'), chat),
    h('p', { class: 'field grow' }, h('label', { for: text.id }, 'Message'), text),
    h('button', { type: 'submit', class: 'primary' }, 'Send'),
  );
  const send = async (ev: SubmitEvent): Promise<void> => {
    ev.preventDefault();
    const chatId = Number(chat.value);
    if (!text.value.trim()) {
      setStatus(status, 'error', 'Write a message first.');
      text.focus();
      return;
    }
    try {
      const r = await ctx.api.post<{ update_id: number; chat_id: number; message_id: number; date: number }>(
        'v1/sandbox/messages',
        {
          chat_id: chatId,
          text: text.value,
        },
      );
      sentByTab.push({
        update_id: r.update_id,
        chat_id: r.chat_id,
        message_id: r.message_id,
        text: text.value,
        at: new Date(r.date * 1000).toISOString(),
      });
      text.value = '';
      setStatus(status, 'ok', `Sent as update ${r.update_id}; the poller picks it up on its next getUpdates.`);
      await view.refresh();
    } catch (err) {
      setStatus(status, 'error', `Not sent: ${describeError(err)}`);
    }
    text.focus();
  };
  form.addEventListener('submit', (ev) => void send(ev));

  const flow = (m: Sent) =>
    h(
      'p',
      { class: 'flow small' },
      'inbox ',
      m.inbox
        ? [h('a', { href: detailHash('inbox', m.inbox.id) }, `#${m.inbox.id}`), ' ', stateBadge(m.inbox.state)]
        : h('span', { class: 'muted' }, 'not polled yet'),
      ' · capture ',
      m.capture
        ? [h('a', { href: detailHash('captures', m.capture.id) }, `#${m.capture.id}`), ' ', stateBadge(m.capture.state)]
        : h('span', { class: 'muted' }, 'none (yet)'),
    );

  chat.addEventListener('change', () => {
    log.replaceChildren();
    void view.refresh();
  });

  const el = h(
    'div',
    { class: 'sandbox' },
    h(
      'div',
      { class: 'page-head' },
      h('h1', { tabindex: -1 }, 'Sandbox chat'),
      h(
        'p',
        { class: 'muted small' },
        `Sandbox mode: messages go to bot ${info.bot_id} through the local Bot API sandbox, not Telegram.`,
      ),
    ),
    log,
    form,
    status,
  );

  const view: View = {
    title: 'Sandbox chat',
    el,
    async refresh() {
      const chatId = Number(chat.value) || info.chat_id;
      const mine = sentByTab.filter((m) => m.chat_id === chatId);
      const [bot] = await Promise.all([
        ctx.api
          .get<{ items: BotMessage[] }>('v1/sandbox/messages', { chat_id: chatId })
          .catch(() => ({ items: [] as BotMessage[] })),
        ...mine
          .filter((m) => m.inbox?.state !== 'handled' || !m.capture || m.capture.state !== 'delivered')
          .map(async (m) => {
            const [inbox, capture] = await Promise.all([
              ctx.api.get<Page<Summaries['inbox']>>('v1/inbox', { update_id: m.update_id, limit: 1 }),
              ctx.api.get<Page<Summaries['captures']>>('v1/captures', { update_id: m.update_id, limit: 1 }),
            ]);
            m.inbox = inbox.items[0];
            m.capture = capture.items[0];
          }),
      ]).catch((err) => {
        setStatus(status, 'error', describeError(err));
        return [{ items: [] as BotMessage[] }];
      });
      const entries = [
        ...mine.map((m) => ({
          key: `u${m.update_id}`,
          at: m.at,
          make: () =>
            h(
              'li',
              { class: 'bubble user', 'data-update-id': m.update_id },
              h('p', null, m.text),
              h('p', { class: 'meta small' }, `you · ${fmtTime(m.at)}`),
              flow(m),
            ),
          flow: () => flow(m),
        })),
        ...bot.items.map((b) => ({
          key: `b${b.message_id}`,
          at: b.sent_at,
          make: () =>
            h(
              'li',
              { class: 'bubble bot' },
              h('p', null, b.text),
              h('p', { class: 'meta small' }, `bot · ${fmtTime(b.sent_at)}`),
            ),
          flow: null,
        })),
      ].sort((a, b) => a.at.localeCompare(b.at) || a.key.localeCompare(b.key));
      // only new messages are added (role="log" announces additions); known ones get their flow updated
      if (entries.length === 0) {
        replaceKeepingFocus(log, h('li', { class: 'muted' }, 'No message in this chat yet.'));
        return;
      }
      log.querySelector('li.muted')?.remove();
      const known = new Map([...log.children].map((li) => [(li as HTMLElement).dataset.key!, li as HTMLElement]));
      let previous: HTMLElement | null = null;
      for (const e of entries) {
        let li = known.get(e.key);
        if (li) {
          if (e.flow) li.querySelector('.flow')?.replaceWith(e.flow());
        } else {
          li = e.make();
          li.dataset.key = e.key;
          if (previous) previous.after(li);
          else log.prepend(li);
        }
        previous = li;
      }
    },
  };
  return view;
}
