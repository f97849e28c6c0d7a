import fs from 'node:fs';

export default async function globalTeardown(): Promise<void> {
  const state = (globalThis as any).__TG_RELAY_PG__ as { pg: { stop(): Promise<void> }; dir: string } | undefined;
  if (!state) return;
  await state.pg.stop();
  if (!process.env.KEEP_TEST_DATA) fs.rmSync(state.dir, { recursive: true, force: true });
}
