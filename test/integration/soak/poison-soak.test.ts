/**
 * The poison soak, short variant (the full one is `npm run soak -- --poison`): the short
 * soak's fleet and chaos (SIGKILLs, a PostgreSQL restart, Bot API and collector faults), smaller,
 * while 20% of the users send hostile text (NUL, lone surrogates, `C:\u0000`-looking text, RTL marks,
 * 4096+ characters) and one handler call in 25 replies invalid content (5,000 characters, whitespace
 * only, a lone surrogate, a NUL). Every invariant of the soak must hold, plus: hostile texts stored
 * exactly, handled and captured with the exact text; poison-reply updates failed at once with
 * RELAY_INVALID_REPLY and nothing else failed (test/support/soak-checks.ts, checkPoison). A share of the
 * replies are media (test/fixtures/soak-media.ts): photo uploads, albums and edits through a reply's
 * placeholder, checked against the sandbox's call log (test/support/soak-media-checks.ts).
 */
import { formatReport } from '../../support/soak-checks';
import { newSeed, runSoak, SHORT_POISON_SOAK } from '../../support/soak-run';

jest.setTimeout(170_000);

it('hostile text and invalid replies fail only their own update through kills, a database restart and faults', async () => {
  const seed = Number(process.env.SOAK_SEED ?? newSeed());
  const lines: string[] = [];
  const report = await runSoak({ ...SHORT_POISON_SOAK, seed, log: (l) => lines.push(l) });
  const text = `${lines.join('\n')}\n${formatReport(report)}`;
  if (report.failures.length > 0 || process.env.SOAK_VERBOSE) console.log(text);
  expect(report.failures).toEqual([]);
  const figure = (label: string) => report.figures.find((f) => f.label === label);
  // the chaos really happened
  expect(Number(figure('SIGKILLs (then restarted)')?.value.split(' ')[0])).toBeGreaterThanOrEqual(
    SHORT_POISON_SOAK.minKills,
  );
  expect(figure('PostgreSQL restarts')?.value).toMatch(/^1 \(embedded/);
  expect(figure('updates stored in the inbox')?.value).toMatch(/^1000 /);
  // the poison really happened, and each poison invariant was checked and held
  for (const label of [
    'hostile-text updates sent',
    'hostile texts stored exactly (raw round-trip)',
    'hostile-text updates handled, the handler saw the exact text',
    'hostile-text updates captured, the collector got the exact text',
    'poison-reply updates failed at once with RELAY_INVALID_REPLY',
    'other updates failed (must be none: no other update or chat held up)',
    'later updates of the chats with a failed update, handled',
    'photo replies: reached the Bot API with exactly the uploaded bytes (sha256 in the call log), Telegram id recorded',
    'albums: sent as one album of 2 photos with exactly their bytes, both Telegram ids recorded',
    'edits: sent with the real message id of the reply they edit (its placeholder resolved)',
    'edit calls that reached the Bot API with a placeholder (non-positive) message id',
  ]) {
    expect(figure(label)).toMatchObject({ ok: true });
  }
  expect(Number(figure('hostile-text updates sent')?.value.split(' ')[0])).toBeGreaterThanOrEqual(150);
  expect(
    Number(figure('poison-reply updates failed at once with RELAY_INVALID_REPLY')?.value.split(' ')[0]),
  ).toBeGreaterThanOrEqual(10);
  expect(report.figures.filter((f) => f.ok === false)).toEqual([]);
});
