/**
 * Keyboard example: an inline keyboard, callback answers, an edit of the bot's own message on a
 * button press, and a reaction. `BOT_HANDLERS=examples/keyboard-bot.ts npm start`, then:
 *
 * - `/menu`: "Pick a colour" with three buttons;
 * - a button press: the callback is answered (a toast), and the menu message is edited in place to
 *   show the choice (the keyboard stays, the chosen button ticked);
 * - any other text: the bot reacts 👍 to it.
 */
import { Markup } from 'telegraf';
import { defineBot } from 'tg-relay';

export const COLOURS = ['red', 'green', 'blue'] as const;

export function colourKeyboard(chosen?: string) {
  return Markup.inlineKeyboard(COLOURS.map((c) => Markup.button.callback(c === chosen ? `✓ ${c}` : c, `colour:${c}`)));
}

export default defineBot((bot, dispatch) => {
  bot.command('menu', (ctx) => ctx.reply('Pick a colour', colourKeyboard()));

  bot.action(/^colour:(red|green|blue)$/, async (ctx) => {
    const colour = ctx.match[1];
    await ctx.answerCbQuery(`You picked ${colour}`);
    // the pressed button's message is the bot's own: editing it is allowed (another's is a 400)
    await ctx.editMessageText(`Colour: ${colour}`, colourKeyboard(colour));
  });

  bot.on('text', (ctx) => ctx.react('👍'));

  // buttons of an older keyboard (other callback data) still get an answer, so the spinner stops
  dispatch.autoAnswerCallbacks();
});
