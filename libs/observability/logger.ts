import pino, { Logger, LoggerOptions } from 'pino';
import { redactDeep, redactToken } from './redact';

export type { Logger };

/**
 * The root logger. One per process; components take `logger.child({ component })`.
 * Never log raw updates or message text; the bot token is scrubbed from every field.
 */
export function createLogger(opts: { level?: string; name?: string; destination?: pino.DestinationStream } = {}): Logger {
  const options: LoggerOptions = {
    level: opts.level ?? 'info',
    name: opts.name ?? 'tg-relay',
    redact: { paths: ['token', 'botToken', '*.token', '*.botToken', 'config.TELEGRAM_BOT_TOKEN', 'headers.authorization'], censor: '<redacted>' },
    serializers: {
      err: (err: unknown) => {
        const s = pino.stdSerializers.err(err as Error) as unknown as Record<string, unknown>;
        return redactDeep(s);
      },
    },
    formatters: {
      log: (obj) => redactDeep(obj),
    },
    hooks: {
      logMethod(args, method) {
        const scrubbed = args.map((a) => (typeof a === 'string' ? redactToken(a) : a)) as typeof args;
        return method.apply(this, scrubbed);
      },
    },
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

/** A logger that discards everything (tests, benchmarks). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
