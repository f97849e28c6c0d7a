/** `count` raw message updates from update_id `first` on, over 100 private chats (the ingress benches' batch). */
export function messageUpdates(first: number, count = 100): string[] {
  const items: string[] = [];
  for (let id = first; id < first + count; id++) {
    const chat = 1000 + (id % 100);
    items.push(
      JSON.stringify({
        update_id: id,
        message: {
          message_id: id,
          from: { id: chat, is_bot: false, first_name: 'U' },
          chat: { id: chat, first_name: 'U', type: 'private' },
          date: 1_700_000_000,
          text: `message ${id}`,
        },
      }),
    );
  }
  return items;
}
