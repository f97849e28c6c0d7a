import pino, { Logger, LoggerOptions } from 'pino';
import { redactDeep, redactToken } from './redact';

export type { Logger };

/**
 * The root logger. One per process; components take `logger.child({ component })`.
 * Never log raw updates or message text; the bot token is scrubbed from every field.
 */
export function createLogger(
  opts: { level?: string; name?: string; destination?: pino.DestinationStream } = {},
): Logger {
  const options: LoggerOptions = {
    level: opts.level ?? 'info',
    name: opts.name ?? 'tg-relay',
    redact: {
      paths: ['token', 'botToken', '*.token', '*.botToken', 'config.TELEGRAM_BOT_TOKEN', 'headers.authorization'],
      censor: '<redacted>',
    },
    serializers: {
      // pino's own serializer (type, message and stack with causes, own fields), redacted; a value
      // formatters.log already made plain is kept as it is
      err: (err: unknown) => (err instanceof Error ? redactDeep({ ...pino.stdSerializers.err(err) }) : err),
      // the message last of all: `log.error(err)` makes err.message the msg, format arguments are
      // interpolated into it — whatever the source, no token leaves in `msg`
      msg: (msg: unknown) => (typeof msg === 'string' ? redactToken(msg) : msg),
    },
    formatters: {
      // runs before the serializers: an Error under `err` is left for the err serializer (a deep
      // copy would drop its non-enumerable message and stack); everything else is redacted here
      log: (obj) => {
        const out: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(obj)) out[k] = k === 'err' && v instanceof Error ? v : redactDeep(v);
        return out;
      },
    },
    hooks: {
      logMethod(args, method) {
        const scrubbed = args.map((a) => (typeof a === 'string' ? redactToken(a) : a)) as typeof args;
        return method.apply(this, scrubbed);
      },
    },
  };
  const logger = opts.destination ? pino(options, opts.destination) : pino(options);
  // child bindings bypass formatters.log (pino serializes them once, at child()): redact them there;
  // children inherit this method from the root instance
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called below with .call(this): each child calls it as itself
  const child = logger.child;
  logger.child = function redactedChild(this: Logger, bindings, childOptions) {
    return child.call(this, redactDeep(bindings), childOptions);
  } as typeof logger.child;
  return logger;
}

/** A logger that discards everything (tests, benchmarks). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
