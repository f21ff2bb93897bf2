import { destination, pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/**
 * JSON logs on stderr, so stdout stays free for command output (`lectern run`); `dest`
 * elsewhere (tests read the lines). Credentials are redacted wherever a header object is logged.
 */
export function createLogger(level: string, name: string, dest: DestinationStream = destination(2)): Logger {
  return pino({ level, name, redact: ['req.headers.authorization', 'headers.authorization', 'authorization', '*.authorization'] }, dest);
}
