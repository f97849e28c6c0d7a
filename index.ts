/**
 * `tg-relay`'s public library entry (`import { enqueueOutbound } from 'tg-relay'`, or `require`):
 * what a bot author's own services and BOT_HANDLERS modules need. Everything else in the package
 * is internal: the `exports` map of package.json exposes only this entry and package.json.
 *
 * From a service, inside your own transaction (the message exists exactly when your writes commit):
 *
 * ```ts
 * import { enqueueOutbound } from 'tg-relay';
 * const client = await pool.connect(); // no pg-boss instance needed (`(client, boss, msg)` still works)
 * await client.query('begin');
 * // … your own writes …
 * await enqueueOutbound(client, { msg_id: 'order:42:paid', chat_id: '123456789', text: 'Paid, thank you!' });
 * await client.query('commit');
 * ```
 *
 * `traceparent` (W3C, optional) in the message makes its sendMessage spans join your trace.
 *
 * Without TypeScript, the same lives in SQL (after `tg-relay migrate`; see sql/functions/enqueue_outbound.sql):
 * `select * from relay.enqueue_outbound(msg_id, chat_id, text [, parse_mode, disable_notification,
 * reply_markup, …, traceparent])` — idempotent by msg_id; a different payload under the same id raises SQLSTATE
 * TR409, an invalid message TR422.
 */

// sending messages from your services
export { enqueueOutbound, enqueueOutboundBatch } from './libs/outbound/enqueue';
export type { EnqueueOptions, EnqueuedOutbound, OutboundDefaults } from './libs/outbound/enqueue';
export type {
  OutboundMessageInput,
  OutboundState,
  OutboundKind,
  OutboundLane,
  ParseMode,
  Delivery,
} from './libs/outbound/message';
export { OUTBOUND_TEXT_MAX, OUTBOUND_MSG_ID_MAX, OUTBOUND_LANES } from './libs/outbound/message';
export {
  OutboundValidationError,
  OutboundConflictError,
  SQLSTATE_OUTBOUND_INVALID,
  SQLSTATE_OUTBOUND_CONFLICT,
} from './libs/outbound/errors';
export type { OutboundProblem } from './libs/outbound/errors';
export { createBoss, QUEUES } from './libs/db/boss';
export { BossLedger } from './libs/db/boss';
export type { JobLedger } from './libs/db/boss';
/** @deprecated the name before the job ledger adapter: what `createBoss` returns (still a pg-boss instance). */
export type { BossLedger as PgBoss } from './libs/db/boss';

// broadcasts: one message to many chats, durable, with progress and pause/resume/cancel
export {
  broadcast,
  broadcastStatus,
  broadcastsList,
  broadcastControl,
  registerAudience,
  planBroadcast,
  BroadcastValidationError,
  BroadcastNotFoundError,
  BroadcastStateError,
  BroadcastKeyConflictError,
} from './libs/broadcasts';
export type {
  BroadcastInput,
  BroadcastOptions,
  CreatedBroadcast,
  BroadcastStatus,
  BroadcastPlan,
} from './libs/broadcasts';

// BOT_HANDLERS modules: `export default defineBot((bot, dispatch) => { … })`
export { defineBot } from './libs/dispatch/handlers-module';
export type { RegisterHandlers, DispatchApi, DispatchBot } from './libs/dispatch/handlers-module';
export { DispatchContext, callApiDirect, dispatchSignal } from './libs/dispatch/context';
export type { ErrorClass, ErrorHandler, ErrorHandlerResult } from './libs/dispatch/error-handlers';
// sessions and the handler's own SQL, committed with the update: `bot.use(session())` (tg-relay's, not
// telegraf's), `const db = await transaction(ctx)` (the same as dispatch.session() / dispatch.transaction(ctx))
export { session } from './libs/dispatch/session-middleware';
export type { DispatchSessionOptions } from './libs/dispatch/session-middleware';
export { sessionStore, SESSION_TTL_MS_DEFAULT } from './libs/dispatch/session-store';
export type { DispatchSessionStore, SessionStoreOptions, SessionValueOptions } from './libs/dispatch/session-store';
export { transaction } from './libs/dispatch/handler-transaction';
export type { DispatchClient } from './libs/dispatch/attempt-work';
export {
  SessionConflictError,
  SessionValueError,
  DispatchDatabaseUnavailableError,
  NotInDispatchError,
} from './libs/dispatch/session-errors';
export {
  HandlerTimeoutError,
  DispatchAbortedError,
  DispatchClosedError,
  CatchAllErrorHandlerError,
  ReplySinkUnavailableError,
} from './libs/dispatch/errors';
