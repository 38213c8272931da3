// The service as a child process (`node --import tsx server/main.ts`), for tests that must kill
// it for real. Its JSON log lines are collected.
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export interface ServiceProcess {
  /** Every line it printed (stdout and stderr). */
  lines: string[];
  /** Resolves with the first line matching `pattern` (rejects when the process exits first or after `timeoutMs`). */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Sends the signal and resolves when the process has exited. */
  stop(signal: NodeJS.Signals): Promise<void>;
}

export async function startServiceProcess(env: Record<string, string>): Promise<ServiceProcess> {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "server/main.ts"], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  const watchers = new Set<() => void>();
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  for (const stream of [child.stdout!, child.stderr!]) {
    let rest = "";
    stream.on("data", (chunk: Buffer) => {
      const parts = (rest + chunk.toString()).split("\n");
      rest = parts.pop()!;
      lines.push(...parts.filter(Boolean));
      for (const watch of watchers) watch();
    });
  }
  const service: ServiceProcess = {
    lines,
    waitFor: (pattern, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => done(new Error(`timed out waiting for ${pattern}; output:\n${lines.join("\n")}`)), timeoutMs);
        const check = () => {
          const line = lines.find((l) => pattern.test(l));
          if (line) done(undefined, line);
        };
        const done = (error?: Error, line?: string) => {
          clearTimeout(timer);
          watchers.delete(check);
          if (error) reject(error);
          else resolve(line!);
        };
        watchers.add(check);
        void exited.then(() => done(new Error(`the service exited; output:\n${lines.join("\n")}`)));
        check();
      }),
    async stop(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
  await service.waitFor(/"msg":"listening"/);
  return service;
}
