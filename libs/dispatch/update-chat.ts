/** Reading the chat an update belongs to, from the update as stored (plain JSON). */

/** `o.key` when `o` is an object, else undefined (what `o?.key` gives for the values JSON has). */
const field = (o: unknown, key: string): unknown =>
  typeof o === 'object' && o !== null ? (o as Record<string, unknown>)[key] : undefined;
/** `o?.chat?.id` */
const chatIdIn = (o: unknown): unknown => field(field(o, 'chat'), 'id');

/** The chat an update belongs to (message-like updates and callback queries), as text. */
export function chatIdOf(update: unknown): string | null {
  const u = (key: string) => field(update, key);
  const carrier =
    u('message') ??
    u('edited_message') ??
    u('channel_post') ??
    u('edited_channel_post') ??
    u('business_message') ??
    u('edited_business_message');
  const id =
    chatIdIn(carrier) ??
    chatIdIn(field(u('callback_query'), 'message')) ??
    chatIdIn(u('my_chat_member')) ??
    chatIdIn(u('chat_member')) ??
    chatIdIn(u('chat_join_request')) ??
    chatIdIn(u('message_reaction')) ??
    chatIdIn(u('message_reaction_count')) ??
    chatIdIn(u('chat_boost')) ??
    chatIdIn(u('removed_chat_boost'));
  return typeof id === 'number' || typeof id === 'string' ? String(id) : null;
}
