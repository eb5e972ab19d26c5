export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Structured JSON logs, one object a line; time from the service clock. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  enabled(level: LogLevel): boolean;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export function jsonLogger(write: (line: string) => void, now: () => number, level: LogLevel): Logger {
  const min = RANK[level];
  const emit = (lvl: LogLevel) => (msg: string, fields?: Record<string, unknown>) => {
    if (RANK[lvl] < min) return;
    write(`${JSON.stringify({ time: new Date(now()).toISOString(), level: lvl, msg, ...fields }, errorReplacer)}\n`);
  };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error'), enabled: (l) => RANK[l] >= min };
}

const errorReplacer = (_key: string, value: unknown): unknown =>
  value instanceof Error ? { name: value.name, message: value.message, stack: value.stack } : value;
