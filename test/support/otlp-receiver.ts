/**
 * An OTLP/HTTP trace receiver for the tracing tests: accepts `POST /v1/traces` in the
 * http/json encoding (OTEL_EXPORTER_OTLP_PROTOCOL=http/json) and keeps every span, flattened with
 * its resource attributes. Counts every request, whatever its path or encoding (the "tracing off
 * sends nothing" tests assert zero).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type AttrValue = string | number | boolean | null | AttrValue[];

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  kind: number;
  attributes: Record<string, AttrValue>;
  resource: Record<string, AttrValue>;
  statusCode: number;
  links: Array<{ traceId: string; spanId: string }>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}
type OtlpAttrs = Array<{ key: string; value: OtlpValue }> | undefined;

function value(v: OtlpValue): AttrValue {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(value);
  return null;
}
const attrs = (a: OtlpAttrs): Record<string, AttrValue> =>
  Object.fromEntries((a ?? []).map((x) => [x.key, value(x.value)]));

export interface OtlpReceiver {
  /** For OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces). */
  endpoint: string;
  spans: ReceivedSpan[];
  /** Every request received (any path). */
  requests: number;
  /** Every request body as received (the "no token, no text" checks search them). */
  bodies: string[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const r: OtlpReceiver = { endpoint: '', spans: [], requests: 0, bodies: [], close: () => Promise.resolve() };
  const server = http.createServer((req, res) => {
    r.requests++;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      r.bodies.push(body);
      try {
        const doc = JSON.parse(body) as {
          resourceSpans?: Array<{
            resource?: { attributes?: OtlpAttrs };
            scopeSpans?: Array<{
              spans?: Array<{
                traceId: string;
                spanId: string;
                parentSpanId?: string;
                name: string;
                kind: number;
                attributes?: OtlpAttrs;
                status?: { code?: number };
                links?: Array<{ traceId: string; spanId: string }>;
              }>;
            }>;
          }>;
        };
        for (const rs of doc.resourceSpans ?? []) {
          const resource = attrs(rs.resource?.attributes);
          for (const ss of rs.scopeSpans ?? [])
            for (const s of ss.spans ?? [])
              r.spans.push({
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId || null,
                name: s.name,
                kind: s.kind,
                attributes: attrs(s.attributes),
                resource,
                statusCode: s.status?.code ?? 0,
                links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
              });
        }
      } catch {
        // not JSON (another encoding): counted, not parsed
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  r.endpoint = `http://127.0.0.1:${port}`;
  r.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return r;
}

/** The environment that turns tracing on in a child process, exporting to `receiver` quickly. */
export function tracingEnv(receiver: OtlpReceiver, extra: Record<string, string> = {}): Record<string, string> {
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '200',
    ...extra,
  };
}
