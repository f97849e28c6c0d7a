/**
 * telegraf's Scenes on the transactional session store: a three-step WizardScene whose updates are
 * dispatched by two engines (so its state can only come from relay.sessions), and a step that fails
 * once without moving the wizard on.
 */
import { Scenes, session } from 'telegraf';
import { createBoss } from '../../../libs/db';
import type { RegisterHandlers } from '../../../libs/dispatch';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { inboxRows, storeUpdates, type DispatchHarness } from './helpers';
import { sessionValue, startSessionWorker } from './session-helpers';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
const harnesses: DispatchHarness[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('dsp_scenes');
  sandbox = createBotApiSandbox({ limits: { enabled: false } });
  await sandbox.start();
});
afterAll(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.stop()));
  await sandbox?.stop();
  await db?.drop();
});

interface Session extends Scenes.WizardSession {
  profile?: { name: string; age: number };
}
type Ctx = Scenes.WizardContext;
const profileOf = (ctx: Ctx) => ctx.session as unknown as Session;

const text = (ctx: Ctx) => (ctx.message as { text?: string } | undefined)?.text ?? '';

function wizardBot(failOnce: { armed: boolean }): RegisterHandlers {
  return (bot, dispatch) => {
    const signup = new Scenes.WizardScene<Ctx>(
      'signup',
      async (ctx) => {
        await ctx.reply('name?');
        return ctx.wizard.next();
      },
      async (ctx) => {
        (ctx.wizard.state as { name?: string }).name = text(ctx);
        if (failOnce.armed) {
          failOnce.armed = false;
          throw new Error('the step fails once after changing the wizard state');
        }
        await ctx.reply('age?');
        return ctx.wizard.next();
      },
      async (ctx) => {
        const profile = { name: (ctx.wizard.state as { name: string }).name, age: Number(text(ctx)) };
        profileOf(ctx).profile = profile;
        await ctx.reply(`saved ${profile.name}`);
        return ctx.scene.leave();
      },
    );
    const stage = new Scenes.Stage<Ctx>([signup]);
    const b = bot as unknown as import('telegraf').Telegraf<Ctx>;
    b.use(session({ store: dispatch.sessionStore<Scenes.WizardSession>() }));
    b.use(stage.middleware());
    b.command('signup', (ctx) => ctx.scene.enter('signup'));
  };
}

const msg = (u: number, t: string) => ({
  update_id: u,
  message: {
    message_id: u,
    date: 1_700_000_000,
    chat: { id: 5150, type: 'private', first_name: 'W' },
    from: { id: 5150, is_bot: false, first_name: 'W' },
    text: t,
    ...(t.startsWith('/') ? { entities: [{ type: 'bot_command', offset: 0, length: t.length }] } : {}),
  },
});

it('a WizardScene runs across 3 updates dispatched by two engines; a failed step leaves the wizard where it was', async () => {
  const failOnce = { armed: true };
  for (let i = 0; i < 2; i++)
    harnesses.push(
      await startSessionWorker({
        url: db.url,
        pool: db.pool,
        apiRoot: sandbox.url,
        register: wizardBot(failOnce),
        replyMode: 'outbound',
      }),
    );
  await storeUpdates(db.pool, createBoss(db.url, { max: 1 }), [msg(1, '/signup'), msg(2, 'Ada'), msg(3, '36')]);
  await waitFor(async () => (await inboxRows(db.pool)).every((r) => r.state === 'handled'), {
    what: 'the wizard finished',
    timeoutMs: 20_000,
  });
  const session = (await sessionValue(db.pool, '5150:5150')) as Session;
  expect(session.profile).toEqual({ name: 'Ada', age: 36 });
  expect(session.__scenes ?? {}).not.toHaveProperty('current'); // left the scene
  const replies = await db.pool.query(`select text from relay.outbound order by id`);
  expect(replies.rows.map((r) => r.text)).toEqual(['name?', 'age?', 'saved Ada']);
  expect((await inboxRows(db.pool)).map((r) => r.attempts)).toEqual([1, 2, 1]);
});
