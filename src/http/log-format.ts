import pretty from 'pino-pretty';
import type { Config } from '../config.ts';

/**
 * Where the HTTP logger writes: human-readable lines (pino-pretty, synchronously, no worker thread)
 * for a person at a terminal, or null for pino's default JSON lines on stdout (files, pipes, log
 * collectors). `LOG_FORMAT=auto` decides by whether stdout is a terminal.
 */
export function logStreamFor(format: Config['logFormat'], isTty: boolean, destination?: NodeJS.WritableStream): { write(line: string): void } | null {
  if (format === 'json' || (format === 'auto' && !isTty)) return null;
  return pretty({
    colorize: isTty,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    singleLine: true,
    sync: true,
    ...(destination ? { destination } : {}),
  });
}
