/**
 * Way in #3: handler replies. In REPLY_MODE=outbound, update dispatch (libs/dispatch) captures the
 * relayed Bot API calls a handler makes (`ctx.reply`, `ctx.replyWithPhoto`, `ctx.editMessageText`,
 * `ctx.answerCbQuery`, …; libs/telegram/methods.ts says which) and hands them to this writer inside the transaction that marks the update handled. So a reply
 * leaves exactly when its update is acknowledged: a failed or retried attempt's replies roll back
 * with it and a handled update's replies are enqueued once (msg_id `update:{bot}:{update_id}:{n}`).
 *
 * Reply ids name the update, not the payload, so if an already-handled update is replayed and its
 * handler now says something else, the original reply is kept (no conflict, nothing sent twice).
 */
import type { OutboundReply, OutboundReplyWriter } from '../dispatch/reply-sink';
import { enqueueOutboundBatch, OutboundDefaults } from './enqueue';
import { OutboundValidationError } from './errors';
import { validateOutboundMessage, type OutboundMessageInput } from './message';
import { methodClass } from '../telegram/methods';

/** `wake: false`: the replies' NOTIFY is left to the dispatch kind's sendReplies (see SendReplies). */
export function createOutboundReplyWriter(deps: { defaults?: OutboundDefaults; wake?: boolean }): OutboundReplyWriter {
  const write: OutboundReplyWriter = async (client, replies) => {
    await enqueueOutboundBatch(client, replies.map(replyToMessage), {
      ...deps.defaults,
      onConflict: 'keep',
      wake: deps.wake,
    });
  };
  write.validate = validateOutboundReply;
  return write;
}

/** Answers go to no chat, nor does an edit of an inline message; every other reply names its chat. */
function needsChat(r: OutboundReply): boolean {
  if (!r.method || r.method === 'sendMessage') return true;
  if (methodClass(r.method) === 'answer') return false;
  const inline = r.params?.inline_message_id;
  return inline === undefined || inline === null || inline === '';
}

/**
 * The problems that would make a handler reply unwritable (the outbound message rules of
 * validateOutboundMessage, plus: a reply names its chat unless it is an answer or an inline edit),
 * or an empty list. Never quotes the text.
 */
export function validateOutboundReply(r: OutboundReply): { field: string; problem: string }[] {
  const problems: { field: string; problem: string }[] = [];
  if (needsChat(r) && (typeof r.chatId !== 'string' || r.chatId.trim() === ''))
    problems.push({ field: 'chat_id', problem: 'is required for a reply (an integer chat id or @channelusername)' });
  try {
    validateOutboundMessage(replyToMessage(r));
  } catch (err) {
    if (!(err instanceof OutboundValidationError)) throw err;
    problems.push(...err.problems);
  }
  return problems;
}

/**
 * An OutboundReply as an outbound message: a sendMessage with its text fields (other parameters in
 * send_options), any other relayed method with its params, uploads and placeholders as captured.
 */
export function replyToMessage(r: OutboundReply): OutboundMessageInput {
  const common = {
    msg_id: r.msgId,
    bot_id: r.botId,
    kind: 'reply' as const,
    delivery: 'at_least_once' as const,
    source_update_id: r.sourceUpdateId,
    ...(r.placeholders?.length ? { placeholders: r.placeholders } : {}),
    ...(r.traceparent ? { traceparent: r.traceparent } : {}),
  };
  if (r.method && r.method !== 'sendMessage') {
    return {
      ...common,
      chat_id: needsChat(r) ? r.chatId : null,
      method: r.method,
      params: r.params ?? null,
      uploads: r.uploads ?? null,
    };
  }
  return { ...common, ...sendMessageFields(r) };
}

function sendMessageFields(r: OutboundReply): Omit<OutboundMessageInput, 'msg_id'> {
  const { chat_id: _c, text: _t, parse_mode: _p, disable_notification: _d, reply_markup: _r, ...rest } = r.payload;
  const sendOptions: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(rest)) if (v !== undefined && v !== null) sendOptions[k] = v;
  let replyMarkup = r.replyMarkup;
  if (typeof replyMarkup === 'string') {
    try {
      replyMarkup = JSON.parse(replyMarkup);
    } catch {
      // left as is: validation names the field
    }
  }
  return {
    chat_id: r.chatId,
    text: r.text,
    parse_mode: r.parseMode ?? null,
    disable_notification: r.disableNotification ?? null,
    reply_markup: (replyMarkup as Record<string, unknown> | undefined) ?? null,
    send_options: Object.keys(sendOptions).length ? sendOptions : null,
  };
}
