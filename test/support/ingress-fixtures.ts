/** Telegram update fixtures for ingress tests (override what the test is about). */

export interface MakeMessageUpdate {
  updateId: number;
  chatId?: number;
  messageId?: number;
  fromId?: number;
  text?: string;
  date?: number;
  kind?: MessageKind;
}

export type MessageKind = 'message' | 'edited_message' | 'channel_post';

/** A message as makeMessageUpdate builds it (tests may add fields). */
export interface FixtureMessage {
  [field: string]: unknown;
  message_id: number;
  date: number;
  chat: { id: number; type: string; first_name?: string; title?: string };
  text: string;
  from?: { id: number; is_bot: boolean; first_name: string };
}

export function makeMessageUpdate<K extends MessageKind = 'message'>(
  o: MakeMessageUpdate & { kind?: K },
): { update_id: number } & Record<K, FixtureMessage> {
  const chatId = o.chatId ?? 1001;
  const message: FixtureMessage = {
    message_id: o.messageId ?? o.updateId,
    date: o.date ?? 1_700_000_000,
    chat:
      chatId > 0
        ? { id: chatId, type: 'private', first_name: `User ${chatId}` }
        : { id: chatId, type: 'group', title: `Group ${chatId}` },
    text: o.text ?? `hello ${o.updateId}`,
  };
  if (o.kind !== 'channel_post')
    message.from = { id: o.fromId ?? (chatId > 0 ? chatId : 1000), is_bot: false, first_name: 'Ann' };
  return { update_id: o.updateId, [o.kind ?? 'message']: message } as { update_id: number } & Record<K, FixtureMessage>;
}

export function makeCallbackUpdate(o: { updateId: number; chatId?: number; fromId?: number; data?: string }) {
  const chatId = o.chatId ?? 1001;
  return {
    update_id: o.updateId,
    callback_query: {
      id: `cb${o.updateId}`,
      from: { id: o.fromId ?? chatId, is_bot: false, first_name: 'Ann' },
      message: { message_id: 1, date: 1_700_000_000, chat: { id: chatId, type: 'private' }, text: 'pick' },
      chat_instance: '42',
      data: o.data ?? 'yes',
    },
  };
}

/** A getUpdates answer built from raw item texts (kept verbatim). */
export function updatesAnswer(items: Array<string | Record<string, unknown>>): string {
  return `{"ok":true,"result":[${items.map((i) => (typeof i === 'string' ? i : JSON.stringify(i))).join(',')}]}`;
}
