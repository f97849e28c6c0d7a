import { classifyCaptureError, classifyCaptureResponse } from '../../../libs/captures/classify-response';

const now = new Date('2025-01-01T00:00:00Z');
const headers = (h: Record<string, string> = {}) => new Headers(h);

describe('collector response classification', () => {
  it.each([200, 201, 202, 204])('%i → delivered', (status) => {
    expect(classifyCaptureResponse(status, headers(), now)).toEqual({ type: 'delivered', status });
  });

  it.each([408, 429, 500, 502, 503, 504])('%i → retry', (status) => {
    expect(classifyCaptureResponse(status, headers(), now)).toMatchObject({
      type: 'retry',
      status,
      errorCode: `HTTP_${status}`,
    });
  });

  it('Retry-After (seconds or date) becomes the retry delay', () => {
    expect(classifyCaptureResponse(429, headers({ 'Retry-After': '3' }), now)).toMatchObject({
      type: 'retry',
      afterMs: 3_000,
    });
    expect(
      classifyCaptureResponse(503, headers({ 'Retry-After': 'Wed, 01 Jan 2025 00:01:00 GMT' }), now),
    ).toMatchObject({ type: 'retry', afterMs: 60_000 });
    expect(classifyCaptureResponse(503, headers(), now)).not.toHaveProperty('afterMs');
  });

  it.each([301, 302, 303, 307, 308, 401, 403, 404, 407])(
    '%i → a configuration problem: retried with backoff, budget untouched, recorded',
    (status) => {
      const o = classifyCaptureResponse(status, headers({ location: 'https://elsewhere.example/x' }), now, 4);
      expect(o).toMatchObject({
        type: 'retry',
        uncounted: true,
        backoffStep: 4,
        status,
        errorCode: `HTTP_${status}`,
        details: { configProblem: true },
      });
      expect(o).not.toHaveProperty('afterMs');
      expect(o.effects).toMatchObject({
        configProblem: {
          code: `HTTP_${status}`,
          status,
          reason: expect.stringContaining(`collector answered ${status}`),
        },
      });
    },
  );

  it.each([400, 409, 410, 413, 422, 100])('%i → terminal', (status) => {
    const o = classifyCaptureResponse(status, headers({ 'Retry-After': '3' }), now);
    expect(o).toMatchObject({ type: 'terminal', status, errorCode: `HTTP_${status}` });
    expect(o.type === 'terminal' && o.reason).toContain(String(status));
  });

  it('network errors and timeouts → retry with a stable code', () => {
    const refused = Object.assign(new TypeError('fetch failed'), {
      cause: { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:1' },
    });
    expect(classifyCaptureError(refused, false)).toMatchObject({ type: 'retry', errorCode: 'ECONNREFUSED' });
    expect(classifyCaptureError(new DOMException('aborted', 'TimeoutError'), true)).toMatchObject({
      type: 'retry',
      errorCode: 'TIMEOUT',
    });
    expect(classifyCaptureError(new DOMException('aborted', 'AbortError'), false)).toMatchObject({
      type: 'retry',
      errorCode: 'ABORTED',
    });
  });
});
