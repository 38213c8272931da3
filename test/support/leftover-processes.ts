// The suite leaves nothing running: a process that a test started (server/main.ts, its embedded
// database, scripts/ingest.ts, nats-server, pebble, Chromium ...) and that is still alive when the
// whole run ends fails the run, after a grace period for processes that are on their way out.
// Found through Linux's /proc: processes that did not exist when the run began, whose working
// directory is the repository (children inherit it), and that belong to the run: descendants of
// the runner, or orphans (re-parented to PID 1 when the test worker that started them exited).
// The runner's own workers are not counted.
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

/** How long processes stopped at the end of their test file may take to exit. */
const GRACE_MS = 15_000;

interface ProcessInfo {
  pid: number;
  ppid: number;
  command: string;
}

const linux = process.platform === "linux";

function processesIn(dir: string): ProcessInfo[] {
  const found: ProcessInfo[] = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (readlinkSync(`/proc/${pid}/cwd`) !== dir) continue;
      const command = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim();
      // the field after the state, behind the parenthesised name (which may hold spaces)
      const ppid = Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ").at(-1)!.split(" ")[1]);
      // a zombie (exited, not yet reaped) has an empty command line: it runs nothing
      if (command) found.push({ pid, ppid, command });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

/** Call before the run: remembers what already ran; the returned check fails on what the run left. */
export function watchLeftoverProcesses(dir: string): () => Promise<void> {
  if (!linux) return async () => {};
  const before = new Set(processesIn(dir).map((p) => p.pid));
  const leftovers = () => {
    const running = processesIn(dir);
    const parentOf = new Map(running.map((p) => [p.pid, p.ppid]));
    const ofThisRun = (p: ProcessInfo) => {
      if (p.ppid === 1) return true;
      for (let pid: number | undefined = p.ppid; pid !== undefined; pid = parentOf.get(pid)) if (pid === process.pid) return true;
      return false;
    };
    // the runner's own workers end with the run, on their own
    return running.filter((p) => !before.has(p.pid) && !/\bvitest\b/.test(p.command) && ofThisRun(p));
  };
  return async () => {
    const deadline = Date.now() + GRACE_MS;
    let left = leftovers();
    while (left.length && Date.now() < deadline) {
      await sleep(250);
      left = leftovers();
    }
    if (!left.length) return;
    for (const { pid } of left) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // exited meanwhile
      }
    }
    process.exitCode = 1;
    throw new Error(`The test run left processes running (killed now): every process a test starts must be stopped in an afterAll/afterEach that runs on failure too:\n${left.map((p) => `  ${p.pid} ${p.command}`).join("\n")}`);
  };
}
