/**
 * The example bot: what tg-relay runs in sandbox mode and in tests. Point BOT_HANDLERS at it
 * (`BOT_HANDLERS=examples/echo-bot.ts`) or at your own module of the same shape.
 *
 * - `/start` answers with a greeting and an inline keyboard;
 * - pressing a button is a callback query: answered (the spinner stops) and acknowledged with a message;
 * - any other text is echoed back;
 * - `/fail` throws `EchoRejected`, which the error handler below turns into a polite reply and
 *   `'handled'` (an explicit recovery decision, so the update is not retried).
 */
import { Markup } from 'telegraf';
import { defineBot } from 'tg-relay';

/** A known, recoverable condition: the user asked for something the bot refuses. */
export class EchoRejected extends Error {
  override name = 'EchoRejected';
}

export const KEYBOARD = Markup.inlineKeyboard([
  [Markup.button.callback('👍 Like', 'like'), Markup.button.callback('👎 Dislike', 'dislike')],
]);

export default defineBot((bot, dispatch) => {
  bot.start((ctx) => ctx.reply(`Hello, ${ctx.from.first_name}! Send me text and I echo it. Rate me:`, KEYBOARD));

  bot.command('fail', () => {
    throw new EchoRejected('the /fail command always fails');
  });

  bot.action(/^(like|dislike)$/, async (ctx) => {
    await ctx.answerCbQuery(ctx.match[1] === 'like' ? 'Thanks!' : 'Noted.');
    await ctx.reply(`You pressed ${ctx.match[1]}.`);
  });

  bot.on('text', (ctx) => ctx.reply(ctx.message.text));

  dispatch.onError(EchoRejected, async (err, ctx) => {
    await ctx.reply(`Sorry: ${err.message}.`);
    return 'handled';
  });

  // Unknown buttons (from an older keyboard) are answered so the user's spinner stops.
  dispatch.autoAnswerCallbacks();
});
