/**
 * The bridge's readiness recovers with the database, not only with the next message: after a
 * failed batch the probe marks the database ok once it answers, and leaves it failed while a
 * server does not.
 */
import { Pool } from 'pg';
import { newBridgeState, probeDatabase } from '../../../libs/jetstream/health';
import { adminUrl } from '../../support/db';

const up = new Pool({ connectionString: adminUrl(), max: 1 });
// nothing listens on port 1: every connection is refused at once
const down = new Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/postgres', max: 1 });
afterAll(async () => {
  await Promise.all([up.end(), down.end()]);
});

it('marks a failed database ok when it answers, and only then', async () => {
  const state = newBridgeState();
  state.database = 'error';
  await probeDatabase(down, state);
  expect(state.database).toBe('error');
  await probeDatabase(up, state);
  expect(state.database).toBe('ok');
});

it('leaves a database it has not seen fail alone (no probe before a failure)', async () => {
  const state = newBridgeState();
  await probeDatabase(up, state);
  expect(state.database).toBe('unknown');
});
