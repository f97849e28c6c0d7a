/**
 * The crash and fault soak, short variant (the full one is `npm run soak`): 2 poller, 3 worker and
 * an admin process against the Bot API sandbox (10% faults, Telegram's limits) and a collector
 * failing 20%; 1,500 updates over 20 chats and 200 outbound messages (a few to chats that fail
 * terminally); pollers and workers SIGKILLed and restarted every few seconds; PostgreSQL restarted
 * once. Every invariant of the soak must hold (see test/support/soak-checks.ts).
 */
import { formatReport } from '../../support/soak-checks';
import { newSeed, runSoak, SHORT_SOAK } from '../../support/soak-run';

jest.setTimeout(170_000);

it('nothing is lost or duplicated beyond the recorded ambiguity through kills, a database restart and faults', async () => {
  const seed = Number(process.env.SOAK_SEED ?? newSeed());
  const lines: string[] = [];
  const report = await runSoak({ ...SHORT_SOAK, seed, log: (l) => lines.push(l) });
  const text = `${lines.join('\n')}\n${formatReport(report)}`;
  if (report.failures.length > 0 || process.env.SOAK_VERBOSE) console.log(text);
  expect(report.failures).toEqual([]);
  const figure = (label: string) => report.figures.find((f) => f.label === label)?.value;
  // the chaos really happened
  expect(Number(figure('SIGKILLs (then restarted)')?.split(' ')[0])).toBeGreaterThanOrEqual(SHORT_SOAK.minKills);
  expect(figure('PostgreSQL restarts')).toMatch(/^1 \(embedded/);
  expect(figure('updates stored in the inbox')).toMatch(/^1500 /);
  expect(report.figures.filter((f) => f.ok === false)).toEqual([]);
  expect(report.figures.filter((f) => f.ok === true).length).toBeGreaterThanOrEqual(25);
});
