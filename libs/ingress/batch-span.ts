/**
 * Spans of ingress: one `ingress.batch` span per committed-or-attempted batch, with the
 * `getUpdates` call (polling; started retroactively, so the idle long polls that return nothing make
 * no trace) and the batch transaction `ingress.persist` as children, and one `ingress.update` child
 * per update (persist-batch.ts) whose traceparent is stored with the inbox row: the dispatch of the
 * update continues that trace in the worker process. Nothing of this runs when tracing is off.
 */
import {
  context,
  currentTraceparent,
  formatTraceparent,
  markError,
  ROOT_CONTEXT,
  SpanKind,
  trace,
  tracer,
  tracingEnabled,
} from '../observability/tracing';

export interface BatchSpanInfo {
  /** `getUpdates` or `webhook`. */
  operation: 'getUpdates' | 'webhook';
  botId: string;
  /** Updates in the answer / body. */
  count: number;
  /** The getUpdates call: start, end, HTTP status, requested offset. */
  call?: { start: Date; end: Date; status: number; offset: number };
}

/**
 * Runs the batch transaction `persist` inside an `ingress.batch` span (a root span when polling;
 * under the incoming request's span for the webhook). `persist` resolves true when it committed.
 */
export async function traceIngressBatch<T>(info: BatchSpanInfo, persist: () => Promise<T>): Promise<T> {
  if (!tracingEnabled()) return persist();
  const t = tracer();
  const parent = info.operation === 'getUpdates' ? ROOT_CONTEXT : context.active();
  const common = {
    'messaging.system': 'telegram',
    'messaging.operation.name': info.operation,
    'messaging.batch.message_count': info.count,
    'tg.bot_id': info.botId,
  };
  const batch = t.startSpan(
    'ingress.batch',
    {
      kind: SpanKind.CONSUMER,
      startTime: info.call?.start,
      attributes: { ...common, 'messaging.operation.type': 'receive' },
    },
    parent,
  );
  const batchCtx = trace.setSpan(parent, batch);
  if (info.call) {
    const call = t.startSpan(
      'getUpdates',
      {
        kind: SpanKind.CLIENT,
        startTime: info.call.start,
        attributes: {
          ...common,
          'messaging.operation.type': 'receive',
          'http.request.method': 'POST',
          'http.response.status_code': info.call.status,
          'tg.offset': info.call.offset,
        },
      },
      batchCtx,
    );
    call.end(info.call.end);
  }
  const persistSpan = t.startSpan(
    'ingress.persist',
    { attributes: { 'db.system.name': 'postgresql', 'db.operation.name': 'transaction' } },
    batchCtx,
  );
  try {
    const r = await context.with(trace.setSpan(batchCtx, persistSpan), persist);
    const outcome = r !== false ? 'committed' : 'not_committed';
    persistSpan.setAttribute('outcome', outcome);
    batch.setAttribute('outcome', outcome);
    return r;
  } catch (err) {
    markError(persistSpan, err);
    markError(batch, err);
    throw err;
  } finally {
    persistSpan.end();
    batch.end();
  }
}

/**
 * One `ingress.update` span per update, a child of the active (persist) span; returns its
 * traceparent for the inbox row, or null when tracing is off.
 */
export function updateSpanTraceparent(u: { updateId: number; chatId: number | null; type: string }): string | null {
  // tracing off (or no ingress span): nothing to continue (an unsampled span still passes its
  // decision on, so that the worker does not sample what ingress did not)
  if (currentTraceparent() === null) return null;
  const span = tracer().startSpan('ingress.update', {
    kind: SpanKind.INTERNAL,
    attributes: {
      'messaging.system': 'telegram',
      'messaging.message.id': String(u.updateId),
      'tg.update_id': u.updateId,
      ...(u.chatId !== null ? { 'tg.chat_id': String(u.chatId) } : {}),
      'tg.update_type': u.type,
    },
  });
  span.end();
  return formatTraceparent(span.spanContext());
}
