/** A raw message update `id` in one of `chats` private chats (the ingress benches' update). */
export function messageUpdate(id: number, chats = 100): string {
  const chat = 1000 + (id % chats);
  return JSON.stringify({
    update_id: id,
    message: {
      message_id: id,
      from: { id: chat, is_bot: false, first_name: 'U' },
      chat: { id: chat, first_name: 'U', type: 'private' },
      date: 1_700_000_000,
      text: `message ${id}`,
    },
  });
}

/** `count` raw message updates from update_id `first` on, over 100 private chats (a batch of the benches). */
export function messageUpdates(first: number, count = 100): string[] {
  return Array.from({ length: count }, (_, i) => messageUpdate(first + i));
}
