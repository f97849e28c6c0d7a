import { TELEGRAM_TEXT_MAX } from '../telegram/limits';

/**
 * A sample token that the sandbox accepts (any `<digits>:<secret>` is accepted and creates a bot).
 * Used by `tg-relay sandbox send` and by sandbox mode when no TELEGRAM_BOT_TOKEN is configured.
 * It is not a secret: it only ever works against the local sandbox.
 */
export const SANDBOX_DEFAULT_TOKEN = '1000000001:SANDBOX-local-bot-token-not-a-secret';

/** First update_id of every bot unless `firstUpdateId` says otherwise. */
export const DEFAULT_FIRST_UPDATE_ID = 100000;

/** Exact Telegram descriptions, kept in one place so tests and product code can match them. */
export const TG_DESCRIPTIONS = {
  unauthorized: 'Unauthorized',
  notFound: 'Not Found',
  conflictPolling: 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running',
  conflictWebhook:
    "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
  textEmpty: 'Bad Request: message text is empty',
  textTooLong: 'Bad Request: message is too long',
  unsupportedParseMode: 'Bad Request: unsupported parse_mode',
  chatNotFound: 'Bad Request: chat not found',
  chatIdEmpty: 'Bad Request: chat_id is empty',
  blocked: 'Forbidden: bot was blocked by the user',
  deactivated: 'Forbidden: user is deactivated',
  migrated: 'Bad Request: group chat was upgraded to a supergroup chat',
  replyNotFound: 'Bad Request: message to be replied not found',
  messageToEditNotFound: 'Bad Request: message to edit not found',
  messageCantBeEdited: "Bad Request: message can't be edited",
  noTextToEdit: 'Bad Request: there is no text in the message to edit',
  noCaptionToEdit: 'Bad Request: there is no caption in the message to edit',
  noMediaToEdit: 'Bad Request: there is no media in the message to edit',
  captionTooLong: 'Bad Request: message caption is too long',
  noFileInRequest: (field: string) => `Bad Request: there is no ${field} in the request`,
  inputMediaNotFound: "Bad Request: can't parse InputMedia: media not found",
  badInputMedia: (why: string) => `Bad Request: can't parse InputMedia: ${why}`,
  badMediaJson: "Bad Request: can't parse media JSON object",
  expectedInputMediaArray: 'Bad Request: expected an Array of InputMedia',
  mediaGroupSize: 'Bad Request: media group must include 2-10 items',
  wrongFileId: 'Bad Request: wrong file identifier/HTTP URL specified',
  parameterRequired: (name: string) => `Bad Request: parameter "${name}" is required`,
  messageIdsMissing: 'Bad Request: message identifiers are not specified',
  tooManyMessageIds: 'Bad Request: too many message identifiers specified',
  messageIdsNotArray: 'Bad Request: expected an Array of message identifiers',
  messageNotFound: (what: string) => `Bad Request: ${what} not found`,
  reactionInvalid: 'Bad Request: REACTION_INVALID',
  latitudeEmpty: 'Bad Request: latitude is empty',
  longitudeEmpty: 'Bad Request: longitude is empty',
  notModified:
    'Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message',
  queryInvalid: 'Bad Request: query is too old and response timeout expired or query ID is invalid',
  badReplyMarkup: "Bad Request: can't parse reply keyboard markup JSON object",
  badSecretToken: 'Bad Request: secret token contains unallowed characters',
  badWebhookUrl: 'Bad Request: bad webhook: Failed to resolve host: Name or service not known',
  tooManyRequests: (n: number) => `Too Many Requests: retry after ${n}`,
} as const;

export const MAX_TEXT_LENGTH = TELEGRAM_TEXT_MAX;
export const PARSE_MODES = new Set(['markdown', 'markdownv2', 'html']);
