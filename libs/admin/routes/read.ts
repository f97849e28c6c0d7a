import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AdminContext } from '../context';
import { traceIdOf } from '../../observability/tracing';
import { notFound } from '../errors';
import { KINDS, ListKind } from '../kinds';
import { attemptHistory, auditList, itemGet, itemList, ListFilter } from '../queries';
import { AuditEntryBody, BotIdFilter, chatFilterFor, errors, IdParams, Limit, listQuery, pageOf } from '../schemas';

const VIEWS: { kind: ListKind; summary: string; detail: string; tag: string }[] = [
  { kind: 'captures', summary: 'CaptureSummary', detail: 'CaptureDetail', tag: 'captures' },
  { kind: 'outbound', summary: 'OutboundSummary', detail: 'OutboundDetail', tag: 'outbound' },
  { kind: 'inbox', summary: 'InboxSummary', detail: 'InboxDetail', tag: 'inbox' },
  { kind: 'quarantine', summary: 'QuarantineSummary', detail: 'QuarantineDetail', tag: 'quarantine' },
];

/** GET /v1/{captures|outbound|inbox|quarantine}[/:id] and GET /v1/audit. */
// eslint-disable-next-line @typescript-eslint/require-await -- a fastify plugin: async so that a route registration that throws rejects register() (a sync throw escapes avvio)
export const readRoutes: FastifyPluginAsyncTypebox<{ ctx: AdminContext }> = async (app, { ctx }) => {
  for (const v of VIEWS) {
    const spec = KINDS[v.kind];
    const query = listQuery(spec.states, {
      chat: spec.chatColumns.length > 0,
      updateId: v.kind !== 'outbound',
      chatSchema: chatFilterFor(v.kind),
      method: v.kind === 'outbound',
    });
    app.get(
      `/v1/${v.kind}`,
      {
        schema: {
          tags: [v.tag],
          summary: `List ${spec.noun}s, newest first`,
          description: `Filters combine with AND. Ordered by ${spec.timeColumn} desc, id desc; pass next_cursor as cursor for the next page.`,
          querystring: query,
          response: { 200: pageOf(v.summary), ...errors(400, 401) },
        },
      },
      async (req) => {
        const { limit, cursor, ...filter } = req.query as ListFilter & { limit?: number; cursor?: string };
        return itemList(ctx.pool, v.kind, filter, { limit: limit ?? 50, cursor });
      },
    );
    app.get(
      `/v1/${v.kind}/:id`,
      {
        schema: {
          tags: [v.tag],
          summary: `One ${spec.noun} with its attempt history (relay.attempts, oldest first, admin actions included)`,
          params: IdParams,
          response: { 200: Type.Ref(v.detail), ...errors(400, 401, 404) },
        },
      },
      async (req) => {
        const row = await itemGet(ctx.pool, v.kind, req.params.id);
        if (!row) throw notFound(spec.noun, req.params.id);
        return {
          ...withTrace(row, ctx.config.TRACE_URL_TEMPLATE),
          history: await attemptHistory(ctx.pool, v.kind, req.params.id),
        };
      },
    );
  }

  app.get(
    '/v1/audit',
    {
      schema: {
        tags: ['audit'],
        summary: 'Admin actions, newest first (relay.attempts with subject admin)',
        description:
          "An entry's bot_id is its subject's bot; actions across bots (recover_stale, a bulk retry without bot_id) have none and are listed only without the bot_id filter.",
        querystring: Type.Object(
          {
            actor: Type.Optional(Type.String({ maxLength: 64 })),
            action: Type.Optional(Type.String({ pattern: '^[a-z_]{1,32}$' })),
            bot_id: Type.Optional({
              ...BotIdFilter,
              description: "actions on this bot's rows, sessions, broadcasts or registration (default: every action)",
            }),
            since: Type.Optional(Type.String({ format: 'date-time' })),
            until: Type.Optional(Type.String({ format: 'date-time' })),
            limit: Type.Optional(Limit),
            cursor: Type.Optional(Type.String({ maxLength: 200 })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            items: Type.Array(Type.Ref('AuditEntry')),
            next_cursor: Type.Union([Type.String(), Type.Null()]),
          }),
          ...errors(400, 401),
        },
      },
    },
    async (req) => {
      const { limit, cursor, ...f } = req.query;
      return auditList(ctx.pool, f, { limit: limit ?? 50, cursor });
    },
  );
  void AuditEntryBody;
};

/**
 * A detail row's stored traceparent as `trace_id` and, with TRACE_URL_TEMPLATE, the link
 * to the trace viewer; the traceparent itself (a span id) is not served.
 */
export function withTrace(row: Record<string, unknown>, template: string | undefined): Record<string, unknown> {
  if (!('traceparent' in row)) return row;
  const { traceparent, ...rest } = row;
  const traceId = traceIdOf(traceparent);
  return {
    ...rest,
    trace_id: traceId,
    trace_url: traceId && template ? template.split('{trace_id}').join(traceId) : null,
  };
}
