import { destination, pino, type Logger } from 'pino';

export type { Logger };

/** JSON logs on stderr, so stdout stays free for command output (`lectern run`). */
export function createLogger(level: string, name: string): Logger {
  return pino({ level, name, redact: ['req.headers.authorization'] }, destination(2));
}
