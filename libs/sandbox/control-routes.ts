/**
 * The sandbox control API over HTTP (JSON in, `{ok:true,result}` out), under `/sandbox/…`, so a
 * process that did not start the sandbox (CLI, subprocess tests, soak) can drive it. Parameters come
 * from the query string and/or a JSON body; camelCase and snake_case names are both accepted.
 *
 *   GET  /sandbox/health
 *   POST /sandbox/inject/message   {token, chatId, text, fromId?, chatType?, username?, firstName?} → Update
 *   POST /sandbox/inject/messages  {token, count, chats: number[]|number, chatBase?, textPrefix?}
 *   POST /sandbox/inject/callback  {token, chatId, data, fromId?, messageId?} → Update
 *   POST /sandbox/inject/raw       {token, raw} (JSON value) or {token, rawText} (verbatim) → {slot}
 *   GET  /sandbox/sent?token=      → SentMessage[]
 *   GET  /sandbox/callbacks?token= → answered callback queries
 *   GET  /sandbox/calls?[token=][&method=] → CallRecord[]
 *   GET  /sandbox/bot?token=       → {bot_id, pending_count, confirmed_offset, webhook, …}
 *   GET  /sandbox/stats
 *   POST /sandbox/faults           {token?, faults: FaultConfig|null}
 *   GET  /sandbox/limits | POST /sandbox/limits {…partial RateLimitConfig}
 *   POST /sandbox/chat-error       {token?, chatId, error: ScriptedChatError|kind|null}
 *   POST /sandbox/revoke           {token}
 *   POST /sandbox/reset
 *   POST /sandbox/crash            closes the server as if it had died (`died` resolves)
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BotApiSandbox } from './bot-api';
import { readControlParams, sendJson, textParam } from './http-io';
import type { ChatType, InjectMessagesInput } from './types';
import { errorMessage } from '../errors';

export class ControlInputError extends Error {}

export type ControlParams = Record<string, unknown>;

export function pick(p: ControlParams, ...names: string[]): unknown {
  for (const n of names) if (p[n] !== undefined) return p[n];
  return undefined;
}

export function str(p: ControlParams, name: string, ...aliases: string[]): string {
  const v = pick(p, name, ...aliases);
  if (typeof v !== 'string' || v === '') throw new ControlInputError(`"${name}" is required (string)`);
  return v;
}

function optStr(p: ControlParams, ...names: string[]): string | undefined {
  const v = pick(p, ...names);
  return v === undefined ? undefined : textParam(v);
}

export function int(p: ControlParams, name: string, ...aliases: string[]): number {
  const v = optInt(p, name, ...aliases);
  if (v === undefined) throw new ControlInputError(`"${name}" is required (integer)`);
  return v;
}

export function optInt(p: ControlParams, ...names: string[]): number | undefined {
  const v = pick(p, ...names);
  if (v === undefined || v === null || v === '') return undefined;
  const n = typeof v === 'string' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n)) throw new ControlInputError(`"${names[0]}" must be an integer`);
  return n;
}

function chatIdValue(p: ControlParams): number | string {
  const v = pick(p, 'chatId', 'chat_id');
  if (typeof v === 'string' && v.startsWith('@')) return v;
  return int(p, 'chatId', 'chat_id');
}

type Handler = (sb: BotApiSandbox, p: ControlParams, res: ServerResponse) => unknown;

const ROUTES: Record<string, Handler> = {
  'GET /sandbox/health': () => ({ status: 'ok' }),
  'POST /sandbox/inject/message': (sb, p) =>
    sb.injectMessage(str(p, 'token'), {
      chatId: int(p, 'chatId', 'chat_id'),
      text: textParam(pick(p, 'text') ?? ''),
      fromId: optInt(p, 'fromId', 'from_id'),
      chatType: optStr(p, 'chatType', 'chat_type') as ChatType | undefined,
      username: optStr(p, 'username'),
      firstName: optStr(p, 'firstName', 'first_name'),
    }),
  'POST /sandbox/inject/messages': (sb, p) => {
    const chats = pick(p, 'chats');
    if (!(Array.isArray(chats) || typeof chats === 'number'))
      throw new ControlInputError('"chats" must be an array of chat ids or a count');
    return sb.injectMessages(str(p, 'token'), int(p, 'count'), {
      chats: chats as InjectMessagesInput['chats'],
      chatBase: optInt(p, 'chatBase', 'chat_base'),
      textPrefix: optStr(p, 'textPrefix', 'text_prefix'),
    });
  },
  'POST /sandbox/inject/callback': (sb, p) =>
    sb.injectCallbackQuery(str(p, 'token'), {
      chatId: int(p, 'chatId', 'chat_id'),
      data: textParam(pick(p, 'data') ?? ''),
      fromId: optInt(p, 'fromId', 'from_id'),
      messageId: optInt(p, 'messageId', 'message_id'),
    }),
  'POST /sandbox/inject/raw': (sb, p) => {
    const rawText = pick(p, 'rawText', 'raw_text');
    return sb.injectRawUpdate(str(p, 'token'), typeof rawText === 'string' ? rawText : pick(p, 'raw'));
  },
  'POST /sandbox/reset-update-ids': (sb, p) => {
    sb.resetUpdateIds(str(p, 'token'), int(p, 'nextUpdateId', 'next_update_id'));
    return true;
  },
  'GET /sandbox/sent': (sb, p) => sb.sent(str(p, 'token')),
  'GET /sandbox/callbacks': (sb, p) => sb.answeredCallbacks(str(p, 'token')),
  'GET /sandbox/calls': (sb, p) => sb.calls(optStr(p, 'token'), { method: optStr(p, 'method') }),
  'GET /sandbox/bot': (sb, p) => sb.botState(str(p, 'token')),
  'GET /sandbox/stats': (sb) => sb.stats(),
  'POST /sandbox/faults': (sb, p) => {
    const faults = pick(p, 'faults');
    if (faults !== null && (typeof faults !== 'object' || Array.isArray(faults))) {
      throw new ControlInputError('"faults" must be an object or null');
    }
    sb.setFaults(faults, optStr(p, 'token'));
    return true;
  },
  'GET /sandbox/limits': (sb) => sb.limits(),
  'POST /sandbox/limits': (sb, p) => {
    const { token: _t, ...limits } = p;
    sb.setLimits(limits);
    return sb.limits();
  },
  'POST /sandbox/chat-error': (sb, p) => {
    const error = pick(p, 'error');
    if (error === undefined) throw new ControlInputError('"error" is required (object, kind, or null)');
    sb.scriptChatError(optStr(p, 'token'), chatIdValue(p), error as never);
    return true;
  },
  'POST /sandbox/revoke': (sb, p) => {
    sb.revokeToken(str(p, 'token'));
    return true;
  },
  'POST /sandbox/reset': (sb) => {
    sb.reset();
    return true;
  },
  // once the answer is out: closing first would cut it off
  'POST /sandbox/crash': (sb, _p, res) => {
    res.once('finish', () => sb.crash());
    return true;
  },
};

export async function handleControlRequest(
  sb: BotApiSandbox,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
  let handler = ROUTES[`${method} ${url.pathname}`];
  // Reads are also accepted as POST with a JSON body.
  if (!handler && method === 'POST') handler = ROUTES[`GET ${url.pathname}`];
  if (!handler) {
    sendJson(res, 404, {
      ok: false,
      error_code: 404,
      description: `Not Found: no sandbox route ${method} ${url.pathname}`,
    });
    return;
  }
  try {
    const params = await readControlParams(req, url);
    const result = handler(sb, params, res);
    sendJson(res, 200, { ok: true, result });
  } catch (err) {
    sendJson(res, 400, { ok: false, error_code: 400, description: `Bad Request: ${errorMessage(err) ?? String(err)}` });
  }
}
