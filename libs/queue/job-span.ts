/**
 * The span of one attempt of a job kind: dispatch's handler run, a capture delivery, a
 * sendMessage attempt. Its parent is the row's stored `traceparent` (the trace of the update or of
 * the enqueue), or none (a new trace; also for a malformed value). The outcome becomes attributes
 * (`outcome`, `http.response.status_code`, `error.type`, `tg.retry_after`), never a message text.
 * Tracing off (the SDK not started): `run` is called directly, nothing else; the attributes are a
 * function so that not even their object is built (bench/worker.ts (d)).
 */
import {
  contextFromTraceparent,
  context,
  markError,
  NOOP_SPAN,
  SpanKind,
  SpanStatusCode,
  trace,
  tracer,
  tracingEnabled,
  type Attributes,
  type Span,
} from '../observability/tracing';
import type { Outcome } from './outcome';

export async function inJobSpan<Effects>(
  name: string,
  opts: { traceparent: unknown; kind: SpanKind; attributes: () => Attributes },
  run: (span: Span) => Promise<Outcome<Effects>>,
): Promise<Outcome<Effects>> {
  if (!tracingEnabled()) return run(NOOP_SPAN);
  const parent = contextFromTraceparent(opts.traceparent);
  const span = tracer().startSpan(name, { kind: opts.kind, attributes: opts.attributes() }, parent);
  try {
    const outcome = await context.with(trace.setSpan(parent, span), () => run(span));
    span.setAttribute('outcome', outcome.label ?? (outcome.type === 'terminal' ? 'failed' : outcome.type));
    if (outcome.status !== undefined) span.setAttribute('http.response.status_code', outcome.status);
    if (outcome.type === 'retry' && outcome.status === 429 && outcome.afterMs !== undefined)
      span.setAttribute('tg.retry_after', Math.ceil(outcome.afterMs / 1000));
    if (outcome.type !== 'delivered') {
      if (outcome.errorCode) span.setAttribute('error.type', outcome.errorCode);
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    return outcome;
  } catch (err) {
    markError(span, err);
    throw err;
  } finally {
    span.end();
  }
}
