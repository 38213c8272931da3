// JSON lines on stdout through pino: `{"level":"info","time":"…","msg":"…",…fields}`. Every line
// is scrubbed of e-mail addresses and API keys before it is written: the callers avoid logging
// them, and this is the net under that rule.
import pino from "pino";

export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger whose lines all carry `bindings` (the request id of one request). */
  child(bindings: LogFields): Logger;
  /** The pino logger underneath (the request lines are written through it: server/http/request-context.ts). */
  readonly pino: pino.Logger;
}

const emailPattern = /[^\s"'<>@,;:()[\]\\]+@[^\s"'<>@,;:()[\]\\]+\.[A-Za-z]{2,}/g;
const apiKeyPattern = /\blik_[A-Za-z0-9_-]+/g;

export function redact(text: string): string {
  // most lines hold neither: two scans for a character and a prefix instead of two regex passes
  const email = text.includes("@");
  const key = text.includes("lik_");
  if (!email && !key) return text;
  return (email ? text.replace(emailPattern, "[email]") : text).replace(apiKeyPattern, "[api-key]");
}

function wrap(base: pino.Logger): Logger {
  const at = (level: LogLevel) => (msg: string, fields: LogFields = {}) => base[level](fields, msg);
  return {
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    child: (bindings) => wrap(base.child(bindings)),
    pino: base,
  };
}

export function createLogger(
  level: LogLevel | "silent" = "info",
  write: (line: string) => void = (line) => process.stdout.write(line + "\n"),
): Logger {
  const destination = { write: (line: string) => write(redact(line.replace(/\n$/, ""))) };
  return wrap(
    pino(
      {
        level,
        base: undefined, // no pid or hostname: the fields are ours
        timestamp: pino.stdTimeFunctions.isoTime,
        formatters: { level: (label) => ({ level: label }) },
      },
      destination,
    ),
  );
}
