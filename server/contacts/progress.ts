// A progress bar on stderr for long operator commands. On a terminal it redraws one line; with
// --progress into a file or pipe it writes a plain line now and then instead.
export interface Progress {
  /** `done` of `total` units (bytes, rows); `detail` is appended to the bar. */
  update(done: number, detail: string): void;
  /** A message (a rejected line) printed above the bar. */
  note(message: string): void;
  /** Draws the final state (always, when enabled) and ends the line. */
  finish(done: number, detail: string): void;
}

export interface ProgressOptions {
  total: number;
  enabled: boolean;
  stream?: NodeJS.WriteStream;
}

const WIDTH = 30;

export function createProgress({ total, enabled, stream = process.stderr }: ProgressOptions): Progress {
  const tty = !!stream.isTTY;
  const every = tty ? 200 : 2_000; // ms between redraws
  let last = 0;
  let shown = "";
  const render = (done: number, detail: string) => {
    const share = total > 0 ? Math.min(1, done / total) : 0;
    const filled = Math.round(share * WIDTH);
    return `[${"#".repeat(filled)}${"-".repeat(WIDTH - filled)}] ${(share * 100).toFixed(1).padStart(5)}%  ${detail}`;
  };
  const clear = () => (tty && shown ? "\r\x1b[K" : "");
  const draw = (done: number, detail: string) => {
    if (!enabled) return;
    const previous = clear();
    shown = render(done, detail);
    stream.write(tty ? `${previous}${shown}` : `${shown}\n`);
  };
  return {
    update(done, detail) {
      const now = Date.now();
      if (now - last < every) return;
      last = now;
      draw(done, detail);
    },
    note(message) {
      stream.write(`${clear()}${message}\n${tty && enabled ? shown : ""}`);
    },
    finish(done, detail) {
      draw(done, detail);
      if (enabled && tty) stream.write("\n");
    },
  };
}
