import {
  AdminStartError,
  isLoopbackHost,
  resolveAdminTokens,
  tokenChecker,
  tokensFromConfig,
} from '../../../libs/admin/auth';
import { loadConfig } from '../../../libs/config';

describe('admin tokens', () => {
  test('ADMIN_TOKEN is labelled "admin"; ADMIN_TOKENS adds labelled tokens', () => {
    const c = loadConfig({
      ADMIN_TOKEN: 'a'.repeat(16),
      ADMIN_TOKENS: ' ops:bbbbbbbbbbbbbbbb , ci-bot:cccccccccccccccc:with:colons ',
    });
    expect(tokensFromConfig(c)).toEqual([
      { label: 'admin', token: 'a'.repeat(16) },
      { label: 'ops', token: 'b'.repeat(16) },
      { label: 'ci-bot', token: 'cccccccccccccccc:with:colons' },
    ]);
  });

  test.each([
    ['nolabel'],
    [':tok-0123456789abcdef'],
    ['ops:short'],
    ['bad label:0123456789abcdef'],
    ['a:0123456789abcdef,a:fedcba9876543210'],
  ])('ADMIN_TOKENS=%s stops the process naming the variable', (v) => {
    expect(() => loadConfig({ ADMIN_TOKENS: v })).toThrow(/ADMIN_TOKENS: expected label:token pairs/);
  });

  test('the same token under two labels, or the label "admin" twice, is refused', () => {
    expect(() => tokensFromConfig(loadConfig({ ADMIN_TOKENS: 'a:0123456789abcdef,b:0123456789abcdef' }))).toThrow(
      AdminStartError,
    );
    expect(() =>
      tokensFromConfig(loadConfig({ ADMIN_TOKEN: 'x'.repeat(16), ADMIN_TOKENS: 'admin:0123456789abcdef' })),
    ).toThrow(/used twice/);
  });

  test('ADMIN_TOKENS is masked when the configuration is printed', () => {
    const { describeConfig } = jest.requireActual('../../../libs/config');
    const lines: string[] = describeConfig(loadConfig({ ADMIN_TOKENS: 'ops:0123456789abcdef' }));
    expect(lines.join('\n')).not.toContain('0123456789abcdef');
  });
});

describe('binding without a token', () => {
  test.each(['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]'])('%s is loopback', (h) =>
    expect(isLoopbackHost(h)).toBe(true),
  );
  test.each(['0.0.0.0', '::', '10.0.0.5', 'admin.example.com', '128.0.0.1'])('%s is not loopback', (h) =>
    expect(isLoopbackHost(h)).toBe(false),
  );

  test('a non-loopback host without a token refuses to start and says why', () => {
    expect(() => resolveAdminTokens(loadConfig({ ADMIN_HOST: '0.0.0.0' }))).toThrow(
      /refusing to serve the admin API on 0\.0\.0\.0 without a token[\s\S]*ADMIN_TOKEN/,
    );
  });

  test('loopback without a token gets a random one for this process, labelled "local"', () => {
    const a = resolveAdminTokens(loadConfig({}));
    const b = resolveAdminTokens(loadConfig({}));
    expect(a.generated?.label).toBe('local');
    expect(a.generated!.token.length).toBeGreaterThanOrEqual(32);
    expect(a.generated!.token).not.toBe(b.generated!.token);
    expect(a.tokens).toEqual([a.generated]);
  });

  test('configured tokens are used as they are on any host', () => {
    expect(resolveAdminTokens(loadConfig({ ADMIN_HOST: '0.0.0.0', ADMIN_TOKEN: 'z'.repeat(20) }))).toEqual({
      tokens: [{ label: 'admin', token: 'z'.repeat(20) }],
    });
  });
});

describe('token check', () => {
  const check = tokenChecker([
    { label: 'admin', token: 'first-token-0123456789' },
    { label: 'ops', token: 'second-token-0123456789' },
  ]);
  test('finds the label of the matching token', () => {
    expect(check('second-token-0123456789')?.label).toBe('ops');
    expect(check('first-token-0123456789')?.label).toBe('admin');
  });
  test('rejects prefixes, extensions and empty strings', () => {
    for (const t of ['first-token-012345678', 'first-token-01234567890', '', 'FIRST-TOKEN-0123456789'])
      expect(check(t)).toBeUndefined();
  });
});
