/**
 * Wizard example: a three-step `Scenes.WizardScene` (name, then age, then a confirmation).
 * `BOT_HANDLERS=examples/wizard-bot.ts npm start`, then `/signup`; `/cancel` leaves at any step.
 *
 * A wizard keeps its step in the session, so the session store decides whether a sign-up survives
 * a restart or moves between workers: by default `dispatch.sessionStore()` (PostgreSQL, committed
 * with each update), as in session-bot.ts.
 */
import { Composer, Scenes, type Middleware, type SessionStore } from 'telegraf';
import { defineBot, type DispatchContext, type RegisterHandlers } from 'tg-relay';

export interface SignupState extends Scenes.WizardSessionData {
  name?: string;
}

export type SignupSession = Scenes.WizardSession<SignupState>;

export interface SignupContext extends DispatchContext {
  session: SignupSession;
  scene: Scenes.SceneContextScene<SignupContext, SignupState>;
  wizard: Scenes.WizardContextWizard<SignupContext>;
}

const textOf = (ctx: SignupContext): string | undefined =>
  ctx.message && 'text' in ctx.message ? ctx.message.text.trim() : undefined;

export const signupWizard = new Scenes.WizardScene<SignupContext>(
  'signup',
  async (ctx) => {
    await ctx.reply('What is your name?');
    return ctx.wizard.next();
  },
  async (ctx) => {
    const name = textOf(ctx);
    if (!name) return ctx.reply('Please send your name as text.');
    ctx.scene.session.name = name;
    await ctx.reply(`How old are you, ${name}?`);
    return ctx.wizard.next();
  },
  async (ctx) => {
    const age = Number(textOf(ctx));
    if (!Number.isInteger(age) || age <= 0 || age > 150) return ctx.reply('Please send your age as a number.');
    await ctx.reply(`Thanks, ${ctx.scene.session.name ?? 'friend'}: signed up at ${age}.`);
    return ctx.scene.leave();
  },
);
signupWizard.command('cancel', async (ctx) => {
  await ctx.reply('Sign-up cancelled.');
  return ctx.scene.leave();
});

export function createWizardBot(options: { store?: SessionStore<SignupSession> } = {}): RegisterHandlers {
  return (bot, dispatch) => {
    const app = new Composer<SignupContext>();
    app.use(dispatch.session<SignupSession>({ store: options.store }));
    app.use(new Scenes.Stage<SignupContext>([signupWizard]).middleware());
    app.command('signup', (ctx) => ctx.scene.enter('signup'));
    // session() and the stage give every context `session`, `scene` and `wizard` at run time
    bot.use(app.middleware() as Middleware<DispatchContext>);
  };
}

export default defineBot(createWizardBot());
