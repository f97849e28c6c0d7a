/**
 * Which Bot API methods a handler's call is relayed for (REPLY_MODE=outbound) and which stay
 * direct. One list, typed against telegraf's own method typings (`@telegraf/types`'s ApiMethods):
 * a method telegraf learns in an upgrade and this table does not name fails the type check, so a
 * new send method can never be silently direct.
 *
 * - `message`: puts something in a chat a user sees (send, copy, forward, edit, delete, pin, react).
 *   Relayed: written with the handled mark, sent after commit in the chat's FIFO, rate limited.
 * - `answer`: answers a query (callback, inline, shipping, pre-checkout, web app). Relayed and
 *   committed with the update too, but sent ahead of the chat's FIFO and outside the message
 *   limits: Telegram expires a query within seconds.
 * - `direct`: reads, `sendChatAction` (a hint with no lasting effect) and bot or chat
 *   administration; called at once, as telegraf does.
 */
import type { ApiMethods } from '@telegraf/types';

export type MethodClass = 'message' | 'answer' | 'direct';

type BotApiMethod = keyof ApiMethods<unknown>;

const CLASSES = {
  // sends, copies, forwards
  sendMessage: 'message',
  forwardMessage: 'message',
  forwardMessages: 'message',
  copyMessage: 'message',
  copyMessages: 'message',
  sendPhoto: 'message',
  sendAudio: 'message',
  sendDocument: 'message',
  sendVideo: 'message',
  sendAnimation: 'message',
  sendVoice: 'message',
  sendVideoNote: 'message',
  sendMediaGroup: 'message',
  sendLocation: 'message',
  sendVenue: 'message',
  sendContact: 'message',
  sendPoll: 'message',
  sendDice: 'message',
  sendSticker: 'message',
  sendInvoice: 'message',
  sendGame: 'message',
  // edits
  editMessageText: 'message',
  editMessageCaption: 'message',
  editMessageMedia: 'message',
  editMessageReplyMarkup: 'message',
  editMessageLiveLocation: 'message',
  stopMessageLiveLocation: 'message',
  stopPoll: 'message',
  setGameScore: 'message',
  // deletes, pins, reactions
  deleteMessage: 'message',
  deleteMessages: 'message',
  pinChatMessage: 'message',
  unpinChatMessage: 'message',
  unpinAllChatMessages: 'message',
  unpinAllForumTopicMessages: 'message',
  unpinAllGeneralForumTopicMessages: 'message',
  setMessageReaction: 'message',
  // answers to queries
  answerCallbackQuery: 'answer',
  answerInlineQuery: 'answer',
  answerPreCheckoutQuery: 'answer',
  answerShippingQuery: 'answer',
  answerWebAppQuery: 'answer',
  // everything else is direct: updates and webhook, the bot itself, reads, chat actions,
  // membership and chat administration, forum topics, commands and profile, stickers, payments' links
  getUpdates: 'direct',
  setWebhook: 'direct',
  deleteWebhook: 'direct',
  getWebhookInfo: 'direct',
  getMe: 'direct',
  logOut: 'direct',
  close: 'direct',
  sendChatAction: 'direct',
  getUserProfilePhotos: 'direct',
  getFile: 'direct',
  banChatMember: 'direct',
  unbanChatMember: 'direct',
  restrictChatMember: 'direct',
  promoteChatMember: 'direct',
  setChatAdministratorCustomTitle: 'direct',
  banChatSenderChat: 'direct',
  unbanChatSenderChat: 'direct',
  setChatPermissions: 'direct',
  exportChatInviteLink: 'direct',
  createChatInviteLink: 'direct',
  editChatInviteLink: 'direct',
  revokeChatInviteLink: 'direct',
  approveChatJoinRequest: 'direct',
  declineChatJoinRequest: 'direct',
  setChatPhoto: 'direct',
  deleteChatPhoto: 'direct',
  setChatTitle: 'direct',
  setChatDescription: 'direct',
  leaveChat: 'direct',
  getChat: 'direct',
  getChatAdministrators: 'direct',
  getChatMemberCount: 'direct',
  getChatMembersCount: 'direct',
  kickChatMember: 'direct',
  getChatMember: 'direct',
  setChatStickerSet: 'direct',
  deleteChatStickerSet: 'direct',
  getForumTopicIconStickers: 'direct',
  createForumTopic: 'direct',
  editForumTopic: 'direct',
  closeForumTopic: 'direct',
  reopenForumTopic: 'direct',
  deleteForumTopic: 'direct',
  editGeneralForumTopic: 'direct',
  closeGeneralForumTopic: 'direct',
  reopenGeneralForumTopic: 'direct',
  hideGeneralForumTopic: 'direct',
  unhideGeneralForumTopic: 'direct',
  setMyName: 'direct',
  getMyName: 'direct',
  getUserChatBoosts: 'direct',
  setMyCommands: 'direct',
  deleteMyCommands: 'direct',
  getMyCommands: 'direct',
  setMyDescription: 'direct',
  getMyDescription: 'direct',
  setMyShortDescription: 'direct',
  getMyShortDescription: 'direct',
  setChatMenuButton: 'direct',
  getChatMenuButton: 'direct',
  setMyDefaultAdministratorRights: 'direct',
  getMyDefaultAdministratorRights: 'direct',
  getStickerSet: 'direct',
  getCustomEmojiStickers: 'direct',
  uploadStickerFile: 'direct',
  createNewStickerSet: 'direct',
  addStickerToSet: 'direct',
  setStickerPositionInSet: 'direct',
  deleteStickerFromSet: 'direct',
  setStickerEmojiList: 'direct',
  setStickerKeywords: 'direct',
  setStickerMaskPosition: 'direct',
  setStickerSetTitle: 'direct',
  deleteStickerSet: 'direct',
  setStickerSetThumbnail: 'direct',
  setCustomEmojiStickerSetThumbnail: 'direct',
  createInvoiceLink: 'direct',
  setPassportDataErrors: 'direct',
  getGameHighScores: 'direct',
} as const satisfies Record<BotApiMethod, MethodClass>;

export type RelayedMethod = {
  [M in keyof typeof CLASSES]: (typeof CLASSES)[M] extends 'direct' ? never : M;
}[keyof typeof CLASSES];

/** The class of a Bot API method by name; a name telegraf does not know is direct (Telegram decides). */
export function methodClass(method: string): MethodClass {
  return Object.hasOwn(CLASSES, method) ? (CLASSES as Record<string, MethodClass>)[method] : 'direct';
}

export function isRelayed(method: string): method is RelayedMethod {
  return methodClass(method) !== 'direct';
}

/** Every relayed method, in the table's order. */
export const RELAYED_METHODS: readonly RelayedMethod[] = Object.keys(CLASSES).filter(isRelayed);

/**
 * How many messages a relayed call counts for against the fleet-wide limits: an album or a batch
 * forward/copy counts as its number of messages, an answer as none, anything else as one.
 */
export function messageCount(method: string, params: Record<string, unknown>): number {
  const cls = methodClass(method);
  if (cls === 'answer') return 0;
  if (cls === 'direct') return 0;
  const list =
    method === 'sendMediaGroup'
      ? params.media
      : /^(forward|copy)Messages$/.test(method)
        ? params.message_ids
        : undefined;
  return Array.isArray(list) ? Math.max(1, list.length) : 1;
}
