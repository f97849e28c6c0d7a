import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AdminContext } from '../context';
import { ITEM_KINDS } from '../kinds';
import { registerBots } from './bots';
import { registerBroadcasts } from './broadcasts';
import { registerItemActions } from './item-actions';
import { registerMessages } from './messages';
import { registerQuarantineActions } from './quarantine-actions';
import { registerRecoverStale } from './recover-stale';
import { registerSessions } from './sessions';
import { createWriteKit } from './write-kit';

export { RECOVER_OLDER_THAN_MAX_MS } from './recover-stale';

/**
 * The write routes. Each runs one transaction that locks the rows, checks their state, calls the
 * action and appends the audit row (relay.attempts, subject 'admin', actor = token label), so the
 * change and its audit commit together. A refused call (404 unknown id, 409 wrong state) is
 * audited too, then answered with its error. Families register in this order, which is the
 * OpenAPI document's order of paths.
 */
// eslint-disable-next-line @typescript-eslint/require-await -- a fastify plugin: async so that a route registration that throws rejects register() (a sync throw escapes avvio)
export const writeRoutes: FastifyPluginAsyncTypebox<{ ctx: AdminContext }> = async (app, { ctx }) => {
  const kit = createWriteKit(ctx);
  for (const kind of ITEM_KINDS) registerItemActions(app, ctx, kit, kind);
  registerRecoverStale(app, ctx, kit);
  registerQuarantineActions(app, ctx, kit);
  registerMessages(app, ctx, kit);
  registerSessions(app, ctx, kit);
  registerBroadcasts(app, ctx, kit);
  registerBots(app, ctx, kit);
};
