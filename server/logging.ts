// JSON lines on stdout. Every string is scrubbed of e-mail addresses and API keys before it is
// written: the callers avoid logging them, and this is the net under that rule.
export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

const order: Record<LogLevel | "silent", number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };
const emailPattern = /[^\s"'<>@,;:()[\]\\]+@[^\s"'<>@,;:()[\]\\]+\.[A-Za-z]{2,}/g;
const apiKeyPattern = /\blik_[A-Za-z0-9_-]+/g;

export function redact(text: string): string {
  return text.replace(emailPattern, "[email]").replace(apiKeyPattern, "[api-key]");
}

export function createLogger(
  level: LogLevel | "silent" = "info",
  write: (line: string) => void = (line) => process.stdout.write(line + "\n"),
): Logger {
  const log = (lvl: LogLevel) => (msg: string, fields: LogFields = {}) => {
    if (order[lvl] < order[level]) return;
    write(redact(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...fields })));
  };
  return { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") };
}
