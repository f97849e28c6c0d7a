/** Telegram update fixtures for ingress tests (override what the test is about). */

export interface MakeMessageUpdate {
  updateId: number;
  chatId?: number;
  messageId?: number;
  fromId?: number;
  text?: string;
  date?: number;
  kind?: 'message' | 'edited_message' | 'channel_post';
}

export function makeMessageUpdate(o: MakeMessageUpdate): Record<string, any> {
  const chatId = o.chatId ?? 1001;
  const message: Record<string, any> = {
    message_id: o.messageId ?? o.updateId,
    date: o.date ?? 1_700_000_000,
    chat: chatId > 0 ? { id: chatId, type: 'private', first_name: `User ${chatId}` } : { id: chatId, type: 'group', title: `Group ${chatId}` },
    text: o.text ?? `hello ${o.updateId}`,
  };
  if (o.kind !== 'channel_post') message.from = { id: o.fromId ?? (chatId > 0 ? chatId : 1000), is_bot: false, first_name: 'Ann' };
  return { update_id: o.updateId, [o.kind ?? 'message']: message };
}

export function makeCallbackUpdate(o: { updateId: number; chatId?: number; fromId?: number; data?: string }): Record<string, any> {
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
