import { RELAY_CODES } from '../../../libs/errors';
import { ADMIN_ERRORS, AdminError, AdminErrorCode, apiError } from '../../../libs/admin/errors';

describe('apiError: the one builder of admin error answers', () => {
  it('answers every code the registry gives an HTTP status, with that status, and no other code', () => {
    const withStatus = Object.entries(RELAY_CODES)
      .filter(([, entry]) => 'http' in entry)
      .map(([code]) => code)
      .sort();
    expect(Object.keys(ADMIN_ERRORS).sort()).toEqual(withStatus);
    for (const code of withStatus as AdminErrorCode[]) {
      expect(apiError(code, 'm').status).toBe((RELAY_CODES[code] as { http: number }).http);
    }
  });

  it('builds { code, message, ...extra } in that key order, and AdminError answers the same', () => {
    const a = apiError('RELAY_ADMIN_NOT_FOUND', 'capture 7 does not exist', { id: '7' });
    expect(JSON.stringify(a.body)).toBe(
      '{"code":"RELAY_ADMIN_NOT_FOUND","message":"capture 7 does not exist","id":"7"}',
    );
    expect(new AdminError('RELAY_ADMIN_NOT_FOUND', 'capture 7 does not exist', { id: '7' }).answer()).toEqual(a);
    // extra fields cannot displace the code or the message from the front
    expect(Object.keys(apiError('RELAY_ADMIN_VALIDATION', 'x', { field: 'f', errors: [] }).body)).toEqual([
      'code',
      'message',
      'field',
      'errors',
    ]);
  });
});
