/** The admin API as the dashboard calls it: same origin, `Authorization: Bearer <token>`. */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export type Query = Record<string, string | number | boolean | null | undefined>;

export interface Api {
  get<T>(path: string, query?: Query): Promise<T>;
  post<T>(path: string, body?: unknown): Promise<T>;
  delete<T>(path: string, body?: unknown): Promise<T>;
}

export function queryString(q: Query = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const s = params.toString();
  return s ? `?${s}` : '';
}

/**
 * Paths are relative (`v1/stats`), so the dashboard works wherever the admin API is mounted.
 * A 401 calls `onUnauthorized` (the shell signs out) and still rejects.
 */
export function createApi(token: string, onUnauthorized: (err: ApiError) => void): Api {
  const request = async <T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> => {
    const hasBody = method !== 'GET';
    let res: Response;
    try {
      res = await fetch(path, {
        method,
        cache: 'no-store',
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/json',
          ...(hasBody ? { 'content-type': 'application/json' } : {}),
        },
        body: hasBody ? JSON.stringify(body ?? {}) : undefined,
      });
    } catch (err) {
      throw new ApiError(0, 'NETWORK', `the admin API did not answer (${(err as Error).message})`);
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    if (!res.ok) {
      // the admin API's error body: { code, message, ...details }
      const body =
        json && typeof json === 'object'
          ? (json as { code?: string; message?: string } & Record<string, unknown>)
          : undefined;
      const err = new ApiError(
        res.status,
        body?.code ?? `HTTP_${res.status}`,
        body?.message ?? `HTTP ${res.status}`,
        body ?? {},
      );
      if (res.status === 401) onUnauthorized(err);
      throw err;
    }
    return json as T;
  };
  return {
    get: (path, query) => request('GET', `${path}${queryString(query)}`),
    post: (path, body) => request('POST', path, body),
    delete: (path, body) => request('DELETE', path, body),
  };
}

export function describeError(err: unknown): string {
  if (err instanceof ApiError) return err.status ? `${err.message} (${err.code}, HTTP ${err.status})` : err.message;
  return (err as Error)?.message ?? String(err);
}
