import { pino, type Logger, type LevelWithSilent } from 'pino';

export type { Logger };

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * Keys whose values must never reach a log line, wherever they appear in a logged object. Config is
 * logged through its redacted effective form; this list is the second line of defence.
 */
const SECRET_KEYS = ['privateKey', 'password', 'keystorePassword', 'truststorePassword', 'authorization'];
const SECRET_PATHS = [
  ...SECRET_KEYS.flatMap((key) => [key, `*.${key}`]),
  'headers.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
];

export function createLogger(
  options: { level?: LevelWithSilent; name?: string; destination?: NodeJS.WritableStream } = {},
): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      name: options.name ?? 'l2stack',
      redact: { paths: SECRET_PATHS, censor: '[redacted]' },
      serializers: { err: pino.stdSerializers.err },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    (options.destination as pino.DestinationStream | undefined) ?? pino.destination({ fd: 1, sync: false }),
  );
}
