/** libs/observability/tracing.ts: when tracing is on, W3C traceparent parsing, token redaction of span attributes. */
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import {
  contextFromTraceparent,
  currentTraceparent,
  formatTraceparent,
  parseTraceparent,
  redactSpan,
  startTracing,
  trace,
  traceIdOf,
  tracingConfigured,
  tracingEnabled,
} from '../../../libs/observability/tracing';

const T = '4bf92f3577b34da6a3ce929d0e0e4736';
const S = '00f067aa0ba902b7';

describe('tracingConfigured: off unless OTEL_* asks for it', () => {
  it.each([
    [{}, false],
    [{ OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, true],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, true],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' }, false],
    [{ OTEL_TRACES_EXPORTER: 'console' }, true],
    [{ OTEL_TRACES_EXPORTER: 'otlp' }, true],
    [{ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, false],
    [{ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, false],
    [{ OTEL_SDK_DISABLED: 'TRUE', OTEL_TRACES_EXPORTER: 'otlp' }, false],
    [{ OTEL_SDK_DISABLED: 'false', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, true],
  ])('%p → %p', (env, on) => {
    expect(tracingConfigured(env)).toBe(on);
  });

  it('startTracing without configuration loads nothing and says so', () => {
    expect(startTracing({ serviceName: 'tg-relay-test', env: {} })).toBe(false);
    expect(tracingEnabled()).toBe(false);
    expect(Object.keys(require.cache).some((k) => k.includes('@opentelemetry/sdk-node'))).toBe(false);
    // the API alone: no span context, no traceparent to store
    expect(currentTraceparent()).toBeNull();
  });
});

describe('W3C traceparent', () => {
  it.each([
    [`00-${T}-${S}-01`, { traceId: T, spanId: S, traceFlags: 1 }],
    [`00-${T}-${S}-00`, { traceId: T, spanId: S, traceFlags: 0 }],
    // a future version: its first four fields are read
    [`01-${T}-${S}-01-whatever`, { traceId: T, spanId: S, traceFlags: 1 }],
  ])('%s is read', (v, sc) => {
    expect(parseTraceparent(v)).toEqual({ ...sc, isRemote: true });
    expect(traceIdOf(v)).toBe(T);
  });

  it.each([
    ['', 'empty'],
    ['garbage', 'not the format'],
    [`00-${T.toUpperCase()}-${S}-01`, 'upper case hex'],
    [`00-${'0'.repeat(32)}-${S}-01`, 'all-zero trace id'],
    [`00-${T}-${'0'.repeat(16)}-01`, 'all-zero span id'],
    [`ff-${T}-${S}-01`, 'version ff'],
    [`00-${T}-${S}-01-extra`, 'version 00 with more fields'],
    [`00-${T}-${S}`, 'no flags'],
    [`00-${T}-${S}-01${'x'.repeat(600)}`, 'too long'],
    [42, 'not a string'],
    [null, 'null'],
  ] as [unknown, string][])('%p is refused (%s): no parent, a new trace', (v) => {
    expect(parseTraceparent(v)).toBeNull();
    expect(traceIdOf(v)).toBeNull();
    expect(trace.getSpanContext(contextFromTraceparent(v))).toBeUndefined();
  });

  it('round trip through a context', () => {
    const ctx = contextFromTraceparent(`00-${T}-${S}-01`);
    expect(currentTraceparent(ctx)).toBe(`00-${T}-${S}-01`);
    expect(formatTraceparent(undefined)).toBeNull();
  });
});

describe('redactSpan', () => {
  it('strips the bot token from every string attribute of a recording span, keeps the rest', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const span = provider.getTracer('t').startSpan('POST', {
      attributes: {
        'url.full': 'https://api.telegram.org/bot123456:AAE-secret_token-value-0123456789/sendMessage',
        'http.target': '/bot123456:AAE-secret_token-value-0123456789/sendMessage',
        'server.address': 'api.telegram.org',
        'http.response.status_code': 200,
      },
    });
    redactSpan(span);
    span.end();
    await provider.forceFlush();
    const [done] = exporter.getFinishedSpans();
    expect(done.attributes).toEqual({
      'url.full': 'https://api.telegram.org/bot<token>/sendMessage',
      'http.target': '/bot<token>/sendMessage',
      'server.address': 'api.telegram.org',
      'http.response.status_code': 200,
    });
    expect(JSON.stringify(done.attributes)).not.toContain('secret_token');
    await provider.shutdown();
  });
});
