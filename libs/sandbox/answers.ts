/**
 * Answers to inline, shipping and pre-checkout queries (answerCallbackQuery is in messaging.ts: the
 * sandbox issues callback queries, so it can tell a valid id from an unknown or expired one). The
 * sandbox never issues these queries, so any non-zero id is taken as valid; the parameters are
 * checked as the Bot API server checks them (Client.cpp) and each answer is recorded on the bot.
 */
import type { BotState } from './bot-state';
import { TG_DESCRIPTIONS } from './constants';
import { BotApiError, boolParam, intParam, textParam } from './http-io';

type Params = Record<string, unknown>;

const MAX_INLINE_RESULTS = 50;

/** The Bot API server reads query ids as integers: anything else is id 0, which Telegram rejects. */
function queryId(params: Params, name: string): string {
  const id = intParam(params[name], 0);
  if (id === 0) throw new BotApiError(400, TG_DESCRIPTIONS.queryInvalid);
  return String(params[name]);
}

function requiredText(params: Params, name: string): string {
  const v = params[name];
  if (v === undefined || v === null || v === '') throw new BotApiError(400, TG_DESCRIPTIONS.parameterRequired(name));
  return textParam(v);
}

function record(bot: BotState, method: string, id: string, params: Params): true {
  bot.answeredQueries.push({ method, query_id: id, params: { ...params } });
  return true;
}

export function answerInlineQuery(bot: BotState, params: Params): true {
  const results = params.results;
  if (typeof results === 'string' && results !== '') {
    throw new BotApiError(400, "Bad Request: can't parse JSON encoded inline query results: invalid JSON");
  }
  if (results !== undefined && results !== null && results !== '') {
    if (!Array.isArray(results)) throw new BotApiError(400, 'Bad Request: expected an Array of inline query results');
    if (results.length > MAX_INLINE_RESULTS) {
      throw new BotApiError(400, 'Bad Request: too many inline query results specified');
    }
    for (const r of results as unknown[]) {
      const item = r && typeof r === 'object' ? (r as Params) : undefined;
      const ok = typeof item?.type === 'string' && item.id !== undefined;
      if (!ok)
        throw new BotApiError(
          400,
          'Bad Request: can\'t parse inline query result: field "type" must be of type String',
        );
    }
  }
  return record(bot, 'answerInlineQuery', queryId(params, 'inline_query_id'), params);
}

export function answerShippingQuery(bot: BotState, params: Params): true {
  if (boolParam(params.ok)) {
    if (!Array.isArray(params.shipping_options)) {
      throw new BotApiError(400, "Bad Request: can't parse shipping options JSON object");
    }
  } else requiredText(params, 'error_message');
  return record(bot, 'answerShippingQuery', queryId(params, 'shipping_query_id'), params);
}

export function answerPreCheckoutQuery(bot: BotState, params: Params): true {
  if (!boolParam(params.ok)) requiredText(params, 'error_message');
  return record(bot, 'answerPreCheckoutQuery', queryId(params, 'pre_checkout_query_id'), params);
}
