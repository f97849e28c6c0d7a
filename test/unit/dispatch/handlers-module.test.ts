import path from 'node:path';
import { Composer } from 'telegraf';
import { ConfigError } from '../../../libs/config/errors';
import { loadBotHandlers, resolveBotHandlers } from '../../../libs/dispatch';

const ROOT = path.resolve(__dirname, '../../..');

describe('BOT_HANDLERS module shapes', () => {
  const register = () => undefined;
  const middleware = (_ctx: unknown, next: () => Promise<void>) => next();
  const composer = new Composer();

  it.each([
    ['a named register function', { register }, 'register()'],
    ['named handlers as a Composer', { handlers: composer }, 'handlers (Composer)'],
    ['named handlers as a middleware function', { handlers: middleware }, 'handlers (middleware function)'],
    ['a default Composer', { default: composer }, 'default export (Composer)'],
    ['a default function (taken as register)', { default: register }, 'default export (register function)'],
    ['module.exports = function', register, 'module.exports (register function)'],
    ['module.exports = Composer', composer, 'module.exports (Composer)'],
    ['register wins over default', { register, default: composer }, 'register()'],
  ])('%s', (_what, mod, shape) => {
    expect(resolveBotHandlers(mod).shape).toBe(shape);
  });

  it('a module without handlers is a configuration error naming BOT_HANDLERS', () => {
    expect(() => resolveBotHandlers({ something: 1 })).toThrow(ConfigError);
    expect(() => resolveBotHandlers({ something: 1 })).toThrow(
      /BOT_HANDLERS: .* exports something; expected a register function/,
    );
  });

  it('loads the example bot by a path relative to the working directory', async () => {
    const h = await loadBotHandlers('examples/echo-bot.ts', ROOT);
    expect(h.shape).toBe('default export (register function)');
    expect(h.file).toBe(path.join(ROOT, 'examples/echo-bot.ts'));
  });

  it('loads a plain CommonJS module by absolute path', async () => {
    const h = await loadBotHandlers(path.join(ROOT, 'test/fixtures/handlers-cjs.js'));
    expect(h.shape).toBe('module.exports (register function)');
  });

  it('a package name resolves from node_modules', async () => {
    await expect(loadBotHandlers('telegraf', ROOT)).rejects.toThrow(/BOT_HANDLERS: "telegraf" exports/);
  });

  it('a missing module is a configuration error', async () => {
    await expect(loadBotHandlers('./no/such/bot.ts', ROOT)).rejects.toThrow(
      /BOT_HANDLERS: cannot find module "\.\/no\/such\/bot\.ts"/,
    );
  });

  it('a module that throws while loading is a configuration error with the cause', async () => {
    const err = await loadBotHandlers('./test/fixtures/handlers-broken.ts', ROOT).catch((e) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toMatch(/loading ".*handlers-broken.ts" failed: handlers module exploded at import/);
    expect(err.cause).toBeInstanceOf(Error);
  });
});
