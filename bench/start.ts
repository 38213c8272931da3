// npm run bench:start: how long a new user waits. Starts the service as `npm start` does (the
// build of dist/ when needed, then the built service; embedded database, demo account) on a fresh
// temporary DATA_DIR and measures the time to the first answer of /healthz and to /readyz 200
// (database, IP data and demo ready); then stops it and measures a restart on the same DATA_DIR.
// The first start builds dist/ from nothing, as on a fresh clone (its incremental state removed):
// the build counts in its figures; the restart finds the build up to date. The IP data's prepared forms are the ones `npm ci` wrote
// (node_modules/.cache), as on a fresh clone; --cold-ip-data points IP_DATA_CACHE_DIR at an empty
// temporary directory, so that the first start prepares them (an install without scripts). Exits 1 on a wrong answer or a start
// beyond its bound. Targets on a quiet machine: first answer <= 10 s, ready <= 30 s.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { hermeticEnv } from "../test/support/config.ts";
import { freePort, root } from "./service.ts";

const coldIpData = process.argv.includes("--cold-ip-data");
/** A start that takes longer than this is a failure (a busy machine may take minutes; a hang is not a start). */
const BOUND_MS = 600_000;

interface StartFigures {
  firstAnswerMs: number;
  readyMs: number;
  steps: Record<string, number>;
}

function fail(message: string): never {
  console.error(`bench:start: ${message}`);
  process.exit(1);
}

async function poll(url: string, ok: (status: number, body: string) => boolean, started: number, child: ChildProcess): Promise<number> {
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) fail(`the service exited (${child.exitCode ?? child.signalCode}) before ${url} answered`);
    if (performance.now() - started > BOUND_MS) fail(`${url} did not answer as expected within ${BOUND_MS / 1000} s`);
    const answer = await fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
      async (res) => ({ status: res.status, body: await res.text() }),
      () => undefined,
    );
    if (answer && ok(answer.status, answer.body)) return performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** `npm start`'s command (package.json), with this node: the build when needed, then dist/. */
const npmStart = `"${process.execPath}" scripts/build-if-needed.mjs && exec "${process.execPath}" --enable-source-maps dist/server/main.js`;

async function start(dataDir: string, ipCache: string | undefined, label: string): Promise<StartFigures> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const child = spawn("/bin/sh", ["-c", npmStart], {
    cwd: root,
    env: hermeticEnv({
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      MAIL_DIR: `${dataDir}.mail`,
      ...(ipCache ? { IP_DATA_CACHE_DIR: ipCache } : {}),
    }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  const errors: string[] = [];
  /** When the start-up's steps were logged (seconds since the spawn). */
  const steps: Record<string, number> = {};
  const stepNames = new Set(["database ready", "IP-to-network data loaded", "listening"]);
  createInterface({ input: child.stdout! }).on("line", (line) => {
    if (/"level":"(error|fatal)"/.test(line)) errors.push(line);
    const msg = line.startsWith("{") ? (JSON.parse(line) as { msg?: string }).msg : undefined;
    if (msg && stepNames.has(msg)) steps[msg] = Math.round((performance.now() - started) / 100) / 10;
  });
  createInterface({ input: child.stderr! }).on("line", (line) => errors.push(line));
  try {
    const firstAnswerMs = await poll(`${base}/healthz`, (status, body) => {
      if (status !== 200 || JSON.parse(body).status !== "ok") fail(`/healthz answered ${status} ${body}`);
      return true;
    }, started, child);
    const readyMs = await poll(`${base}/readyz`, (status, body) => {
      if (status !== 200 && status !== 503) fail(`/readyz answered ${status} ${body}`);
      return status === 200 && JSON.parse(body).status === "ready";
    }, started, child);
    // ready means the API answers: the documents and the demo page
    for (const pathname of ["/docs", "/openapi.json"]) {
      const res = await fetch(`${base}${pathname}`);
      if (res.status !== 200) fail(`${pathname} answered ${res.status} once ready`);
    }
    const stepText = Object.entries(steps).map(([msg, at]) => `"${msg}" ${at} s`).join(", ");
    console.log(`${label}: first answer ${(firstAnswerMs / 1000).toFixed(1)} s, ready ${(readyMs / 1000).toFixed(1)} s (${stepText})`);
    return { firstAnswerMs, readyMs, steps };
  } finally {
    const exited = once(child, "exit");
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    const [code] = (await exited) as [number | null];
    if (code !== 0) errors.push(`exit code ${code} on SIGTERM`);
    if (errors.length) fail(`${label}: error output:\n${errors.join("\n")}`);
  }
}

const dir = mkdtempSync(path.join(tmpdir(), "bench-start-"));
try {
  const load = loadavg().map((n) => n.toFixed(2)).join(", ");
  console.log(`bench:start (load average ${load}; ${coldIpData ? "IP data prepared at the first start, as after an install without scripts" : "IP data prepared by npm ci, as on a fresh clone"})`);
  const dataDir = path.join(dir, "pglite");
  const ipCache = coldIpData ? path.join(dir, "ip-data-cache") : undefined;
  // a fresh clone has no dist/: the first start builds it all (tsc's incremental state removed)
  for (const file of ["dist/.built", "dist/.tsbuildinfo"]) rmSync(path.join(root, file), { force: true });
  const first = await start(dataDir, ipCache, "first start (with the build)");
  const restart = await start(dataDir, ipCache, "restart");
  console.log(JSON.stringify({ loadAverage: loadavg(), first, restart }));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
