/**
 * OpenTelemetry traces. OFF unless configured: without an OTLP endpoint
 * (OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or an explicit
 * OTEL_TRACES_EXPORTER, and always with OTEL_SDK_DISABLED=true, the SDK is not even loaded: only
 * @opentelemetry/api is, whose tracer is a no-op (bench/worker.ts measures that this costs nothing).
 *
 * On: the standard Node SDK (@opentelemetry/sdk-node) reads the standard OTEL_* variables itself
 * (exporter, protocol incl. http/json and http/protobuf, sampler, batch processor, resource), with
 * the maintained instrumentations of pg, http, undici and fastify. They are registered by
 * `startTracing`, which the CLI calls before it loads a command module (so before pg, fastify or
 * undici are required). Only traces: metrics are prom-client's (METRICS_PORT), logs are pino's.
 *
 * What never becomes an attribute: message text, raw payloads, the bot token (Bot API URLs are
 * `/bot<token>/<method>`: every string attribute of the http/undici spans is redacted), query
 * parameters (instrumentation-pg's enhancedDatabaseReporting stays off).
 *
 * Trace context crosses processes through the database: a row's `traceparent` column (W3C format,
 * sql/0014_traceparent.sql) is written from the active span where the row is created and read back
 * as the parent where the row is worked on (`contextFromTraceparent`).
 */
import { errorCode } from '../errors';
import os from 'node:os';
import {
  context,
  INVALID_SPAN_CONTEXT,
  isSpanContextValid,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import { redactToken } from './redact';

export { SpanKind, SpanStatusCode, ROOT_CONTEXT, context, trace, type Span, type Context, type Attributes };

const TRACER_NAME = 'tg-relay';

interface TracingEnv {
  [name: string]: string | undefined;
}

/** True when the environment asks for traces (see the module comment). */
export function tracingConfigured(env: TracingEnv = process.env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  if (exporters.length > 0) return !exporters.every((e) => e === 'none');
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim());
}

interface Started {
  shutdown(): Promise<void>;
}
let started: Started | null = null;

/** A span that records nothing, for code paths that skip tracing when it is off. */
export const NOOP_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** Whether this process runs the SDK (startTracing was called with tracing configured). */
export function tracingEnabled(): boolean {
  return started !== null;
}

/**
 * Loads and starts the SDK when tracing is configured; false (and nothing loaded) otherwise.
 * `serviceName` is the default service.name (OTEL_SERVICE_NAME or service.name in
 * OTEL_RESOURCE_ATTRIBUTES win). Idempotent.
 */
export function startTracing(opts: { serviceName: string; env?: TracingEnv }): boolean {
  const env = opts.env ?? process.env;
  if (started) return true;
  if (!tracingConfigured(env)) return false;
  /* eslint-disable @typescript-eslint/no-require-imports */
  // required here, not imported: a process without tracing never loads the SDK
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { resourceFromAttributes } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const { HttpInstrumentation } =
    require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { UndiciInstrumentation } =
    require('@opentelemetry/instrumentation-undici') as typeof import('@opentelemetry/instrumentation-undici');
  const { PgInstrumentation } =
    require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');
  const { FastifyOtelInstrumentation } = require('@fastify/otel') as typeof import('@fastify/otel');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const named =
    Boolean(env.OTEL_SERVICE_NAME?.trim()) || /(^|,)\s*service\.name\s*=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? '');
  const instanceGiven = /(^|,)\s*service\.instance\.id\s*=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? '');
  const sdk = new NodeSDK({
    serviceName: named ? undefined : opts.serviceName,
    resource: resourceFromAttributes(instanceGiven ? {} : { 'service.instance.id': `${os.hostname()}/${process.pid}` }),
    // traces only: metrics are prom-client's, logs pino's (the SDK would default both to OTLP)
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({
        // a Bot API call is traced only inside a span of ours (a sendMessage attempt, a getUpdates)
        requireParentforOutgoingSpans: true,
        ignoreIncomingRequestHook: (req) => isProbe(req.url),
        requestHook: (span) => redactSpan(span),
        responseHook: (span) => redactSpan(span),
      }),
      new UndiciInstrumentation({
        requireParentforSpans: true,
        requestHook: (span) => redactSpan(span),
        responseHook: (span) => redactSpan(span),
      }),
      // no parameters (enhancedDatabaseReporting off); the claim loops' polling is not traced by itself
      new PgInstrumentation({ requireParentSpan: true, enhancedDatabaseReporting: false }),
      new FastifyOtelInstrumentation({ registerOnInitialization: true, ignorePaths: ({ url }) => isProbe(url) }),
    ],
  });
  sdk.start();
  started = { shutdown: () => sdk.shutdown() };
  return true;
}

/** Flushes and stops the SDK (buffered spans are exported); a no-op when tracing is off. Never throws. */
export async function shutdownTracing(timeoutMs = 5_000): Promise<void> {
  const s = started;
  if (!s) return;
  started = null;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    s.shutdown().catch(() => undefined),
    new Promise<void>((r) => {
      timer = setTimeout(r, timeoutMs);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
}

const isProbe = (url: string | undefined): boolean => !!url && /^\/(health|metrics)(\/|\?|$)/.test(url);

/**
 * Strips the bot token from every string attribute of a span (http/undici spans carry the request
 * URL, and Bot API URLs carry the token). Reads the SDK span's attribute map, so it also covers
 * attribute names a future instrumentation version adds.
 */
export function redactSpan(span: Span): void {
  // the SDK's span class keeps them in `attributes`; the API's Span interface does not declare it
  const attrs: unknown = Reflect.get(span, 'attributes');
  if (typeof attrs !== 'object' || attrs === null) return;
  for (const [k, v] of Object.entries(attrs)) {
    if (typeof v === 'string') {
      const r = redactToken(v);
      if (r !== v) span.setAttribute(k, r);
    }
  }
}

/** The tracer of tg-relay's own spans (a no-op tracer when the SDK is not started). */
export function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

/** W3C trace-context `traceparent`, version 00 (other versions: the first 55 characters, per the spec's forward compatibility). */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The span context of a valid W3C traceparent, or null (malformed, all-zero ids, version ff). */
export function parseTraceparent(value: unknown): SpanContext | null {
  if (typeof value !== 'string' || value.length > 512) return null;
  const m = TRACEPARENT.exec(value.trim());
  if (!m) return null;
  const [, version, traceId, spanId, flags, rest] = m;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  const sc: SpanContext = { traceId, spanId, traceFlags: parseInt(flags, 16) & 0xff, isRemote: true };
  return isSpanContextValid(sc) ? sc : null;
}

export function isValidTraceparent(value: unknown): value is string {
  return parseTraceparent(value) !== null;
}

/** The traceparent of a span context, or null when it is not valid (tracing off, no span). */
export function formatTraceparent(sc: SpanContext | undefined): string | null {
  if (!sc || !isSpanContextValid(sc)) return null;
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 1) === 1 ? '01' : '00'}`;
}

/** The traceparent of the active span (to store with a row this span creates), or null. */
export function currentTraceparent(ctx: Context = context.active()): string | null {
  return formatTraceparent(trace.getSpanContext(ctx));
}

/**
 * A root context whose parent is the row's stored traceparent; a missing or malformed one gives a
 * plain root context (a new trace starts: a bad value never breaks the work).
 */
export function contextFromTraceparent(value: unknown): Context {
  const sc = parseTraceparent(value);
  return sc ? trace.setSpanContext(ROOT_CONTEXT, sc) : ROOT_CONTEXT;
}

/** The trace id of a stored traceparent (the dashboard shows it), or null. */
export function traceIdOf(value: unknown): string | null {
  return parseTraceparent(value)?.traceId ?? null;
}

/**
 * Runs `fn` in a new active span and ends it: an exception marks the span as an error (the
 * exception's type only: messages can quote content) and is rethrown.
 */
export async function inSpan<T>(
  name: string,
  opts: { kind?: SpanKind; attributes?: Attributes; parent?: Context },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  if (!started) return fn(NOOP_SPAN);
  const parent = opts.parent ?? context.active();
  const span = tracer().startSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    markError(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Marks a span failed with the error's type (never its message: it may quote content). */
export function markError(span: Span, err: unknown, outcome = 'error'): void {
  const type = err instanceof Error ? err.constructor?.name || err.name : typeof err;
  const code = errorCode(err);
  span.setAttribute('error.type', code !== undefined && /^[A-Z0-9_]{2,64}$/.test(code) ? code : type);
  span.setAttribute('outcome', outcome);
  span.setStatus({ code: SpanStatusCode.ERROR });
}
