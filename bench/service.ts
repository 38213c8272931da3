// The service as `npm start` runs it in production, in its own process (its own event loop), for
// the benchmarks: a free loopback port, start (waiting until it answers), stop.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { hermeticEnv } from "../test/support/config.ts";

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

export async function freePort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}

/**
 * A TypeScript entry point of the repository in its own process; its log lines are dropped, errors
 * shown. BENCH_CPU_PROF=<dir>: each such process writes a CPU profile there when it exits
 * (node --cpu-prof; open it in Chrome DevTools or speedscope).
 */
export function startProcess(script: string, env: Record<string, string>): ChildProcess {
  const profile = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${path.resolve(process.env.BENCH_CPU_PROF)}`] : [];
  return spawn(process.execPath, [...profile, "--import", "tsx", script], {
    cwd: root,
    env: hermeticEnv({ ...process.env, ...env }), // no DNS query leaves this machine
    stdio: ["ignore", "ignore", "inherit"],
  });
}

/**
 * Starts server/main.ts in production mode with `env` on top; resolves once `probePath` answers
 * and /readyz says ready (the port answers /healthz before the database and the IP data are).
 */
export async function startService(port: number, env: Record<string, string>, probePath = "/healthz"): Promise<ChildProcess> {
  // request logs are written (as in production) and dropped
  const child = startProcess("server/main.ts", {
    NODE_ENV: "production",
    PORT: String(port),
    HOST: "127.0.0.1",
    LOG_LEVEL: "info",
    SMTP_URL: "smtp://127.0.0.1:2525", // production requires one; the benches send no mail
    ...env,
  });
  for (let tries = 0; tries < 600; tries++) {
    if (child.exitCode !== null) throw new Error("the service exited before it listened");
    const up = await fetch(`http://127.0.0.1:${port}${probePath}`, { method: "POST" }).then(() => true, () => false);
    const ready = up && (await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false));
    if (ready) return child;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error("the service did not start listening");
}

export async function stopService(child: ChildProcess): Promise<void> {
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  await exited;
}

