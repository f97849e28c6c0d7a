import {
  WEBHOOK_ERROR_RECENT_MS,
  WEBHOOK_STALLED_CHECKS,
  WebhookDeliveryWatch,
} from '../../../libs/ingress/webhook-delivery';

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);
const info = (pending: number, errorAgoMs: number | null) => ({
  pending_update_count: pending,
  ...(errorAgoMs === null
    ? {}
    : { last_error_date: Math.floor((NOW - errorAgoMs) / 1000), last_error_message: 'Connection refused' }),
});

describe('WebhookDeliveryWatch', () => {
  it(`fails after ${WEBHOOK_STALLED_CHECKS} checks of a backlog that does not shrink, with a recent error`, () => {
    const w = new WebhookDeliveryWatch();
    expect(w.observe(info(3, 1_000), NOW).state).toBe('suspect'); // nothing to compare with yet
    expect(w.observe(info(3, 1_000), NOW).state).toBe('suspect');
    const v = w.observe(info(4, 1_000), NOW);
    expect(v.state).toBe('failing');
    expect(v.state === 'failing' && v.reason).toMatch(
      /^Telegram cannot deliver to the webhook: 4 updates pending, not draining; last error at .*: Connection refused\./,
    );
    expect(w.observe(info(4, 1_000), NOW).state).toBe('failing');
    // one delivered: the backlog drains, the episode is over
    expect(w.observe(info(3, 1_000), NOW).state).toBe('healthy');
  });

  it('a recent error with an empty or draining backlog, or an old error with a stuck one, is healthy', () => {
    const w = new WebhookDeliveryWatch();
    expect(w.observe(info(6, 1_000), NOW).state).toBe('suspect'); // nothing to compare with yet
    for (const n of [5, 4, 3, 2, 1, 0]) expect(w.observe(info(n, 1_000), NOW).state).toBe('healthy');
    const old = new WebhookDeliveryWatch();
    for (let i = 0; i < 5; i++)
      expect(old.observe(info(7, WEBHOOK_ERROR_RECENT_MS + 1_000), NOW).state).toBe('healthy');
    const none = new WebhookDeliveryWatch();
    for (let i = 0; i < 5; i++) expect(none.observe(info(7, null), NOW).state).toBe('healthy');
  });

  it('reset (re-registration, a new lease) starts the count again', () => {
    const w = new WebhookDeliveryWatch();
    for (let i = 0; i < 3; i++) w.observe(info(2, 0), NOW);
    expect(w.observe(info(2, 0), NOW).state).toBe('failing');
    w.reset();
    expect(w.observe(info(2, 0), NOW).state).toBe('suspect');
  });
});
