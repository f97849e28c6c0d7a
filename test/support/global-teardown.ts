import fs from 'node:fs';

export default async function globalTeardown(): Promise<void> {
  const state = (globalThis as { __TG_RELAY_PG__?: { pg: { stop(): Promise<void> }; dir: string } }).__TG_RELAY_PG__;
  if (!state) return;
  await state.pg.stop();
  if (!process.env.KEEP_TEST_DATA) fs.rmSync(state.dir, { recursive: true, force: true });
}
