/**
 * Way in #3: handler replies. In REPLY_MODE=outbound, update dispatch (libs/dispatch) captures the
 * `sendMessage` calls a handler makes (`ctx.reply`, `ctx.sendMessage`, `ctx.telegram.sendMessage`)
 * and hands them to this writer inside the transaction that marks the update handled. So a reply
 * leaves exactly when its update is acknowledged: a failed or retried attempt's replies roll back
 * with it and a handled update's replies are enqueued once (msg_id `update:{bot}:{update_id}:{n}`).
 *
 * Reply ids name the update, not the payload, so if an already-handled update is replayed and its
 * handler now says something else, the original reply is kept (no conflict, nothing sent twice).
 */
import type { JobLedger } from '../db/boss';
import type { OutboundReply, OutboundReplyWriter } from '../dispatch/reply-sink';
import { enqueueOutboundBatch, OutboundDefaults } from './enqueue';
import { OutboundValidationError } from './errors';
import { validateOutboundMessage, type OutboundMessageInput } from './message';

export function createOutboundReplyWriter(deps: { boss: JobLedger; defaults?: OutboundDefaults }): OutboundReplyWriter {
  const write: OutboundReplyWriter = async (client, replies) => {
    await enqueueOutboundBatch(client, deps.boss, replies.map(replyToMessage), {
      ...deps.defaults,
      onConflict: 'keep',
    });
  };
  write.validate = validateOutboundReply;
  return write;
}

/**
 * The problems that would make a handler reply unwritable (the outbound message rules of
 * validateOutboundMessage, plus: a reply names its chat), or an empty list. Never quotes the text.
 */
export function validateOutboundReply(r: OutboundReply): { field: string; problem: string }[] {
  const problems: { field: string; problem: string }[] = [];
  if (r.chatId.trim() === '')
    problems.push({ field: 'chat_id', problem: 'is required for a reply (an integer chat id or @channelusername)' });
  try {
    validateOutboundMessage(replyToMessage(r));
  } catch (err) {
    if (!(err instanceof OutboundValidationError)) throw err;
    problems.push(...err.problems);
  }
  return problems;
}

export function replyToMessage(r: OutboundReply): OutboundMessageInput {
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
    msg_id: r.msgId,
    bot_id: r.botId,
    chat_id: r.chatId,
    text: r.text,
    parse_mode: r.parseMode ?? null,
    disable_notification: r.disableNotification ?? null,
    reply_markup: (replyMarkup as Record<string, unknown> | undefined) ?? null,
    send_options: Object.keys(sendOptions).length ? sendOptions : null,
    kind: 'reply',
    delivery: 'at_least_once',
    source_update_id: r.sourceUpdateId,
    ...(r.traceparent ? { traceparent: r.traceparent } : {}),
  };
}
