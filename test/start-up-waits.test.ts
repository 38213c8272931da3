// What a start-up leans on: the AS table's prepared form (read instead of parsing the CSV at each
// start) and the waits for a database that does not answer yet (warn once, not an error per try).
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { logAtLevelOf, throughWaits, waits } from "../server/db/waits.ts";
import { FIRST_RETRY_MS, runPeriodically } from "../server/jobs/periodic.ts";
import type { Logger } from "../server/logging.ts";
import { AsnTable, loadAsnTable } from "../server/tracking/ipdata/asn-table.ts";
import { parseIp } from "../server/tracking/ipdata/ip.ts";
import { hermeticEnv } from "./support/config.ts";

const ip = (text: string) => text.split(".").reduce((n, part) => n * 256 + Number(part), 0);

function smallTable(): AsnTable {
  const v4 = [`${ip("10.0.0.0")},${ip("10.0.0.255")},64500,Acme Widgets`, `${ip("11.0.0.0")},${ip("11.1.255.255")},64501,"Example ""Access"", Inc."`].join("\n");
  const v6 = `${(0x20010db8n << 96n).toString()},${((0x20010db8n << 96n) | ((1n << 96n) - 1n)).toString()},64502,Six Networks`;
  return new AsnTable(Buffer.from(v4), Buffer.from(v6));
}

const addresses = ["10.0.0.7", "11.1.2.3", "12.0.0.1", "2001:db8::1", "2001:db9::1", "9.255.255.255"];
const lookUps = (table: AsnTable) => addresses.map((a) => table.lookup(parseIp(a)!));

describe("AsnTable prepared form", () => {
  it("when a table is written to its prepared form and read back, then every look-up, size and name is the same", () => {
    const table = smallTable();
    const again = AsnTable.fromPrepared(table.toPrepared())!;
    expect(again.size).toEqual(table.size);
    expect(lookUps(again)).toEqual(lookUps(table));
    expect(again.nameOf(64501)).toBe('Example "Access", Inc.');
  });

  it("when the bytes do not start on a 4-byte boundary (a pooled buffer), then they are read all the same", () => {
    const prepared = smallTable().toPrepared();
    const unaligned = Buffer.alloc(prepared.length + 1).subarray(1);
    prepared.copy(unaligned);
    expect(lookUps(AsnTable.fromPrepared(unaligned)!)).toEqual(lookUps(smallTable()));
  });

  it("when the bytes are of another format or cut short, then they are not taken for a table", () => {
    const prepared = smallTable().toPrepared();
    expect(AsnTable.fromPrepared(prepared.subarray(0, prepared.length - 4))).toBeUndefined();
    expect(AsnTable.fromPrepared(Buffer.from("start,end,asn,name\n"))).toBeUndefined();
  });

  describe("loadAsnTable", () => {
    const dir = mkdtempSync(join(tmpdir(), "asn-table-"));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it("when there is no prepared form, then the CSV is parsed and the form written; the next load reads it, with the same answers", () => {
      const file = join(dir, "asn.bin");
      const parsed = loadAsnTable(file);
      expect(existsSync(file)).toBe(true);
      const read = loadAsnTable(file);
      expect(read.size).toEqual(parsed.size);
      expect(read.size.ipv4).toBeGreaterThan(100_000);
      const sample = ["17.253.144.10", "8.8.8.8", "2a00:1450:4001::1", "192.168.1.1"].map((a) => parseIp(a)!);
      expect(sample.map((a) => read.lookup(a))).toEqual(sample.map((a) => parsed.lookup(a)));
      expect(read.lookup(parseIp("17.253.144.10")!)?.asn).toBe(714);
    });
  });
});

function recordingLogger(): Logger & { lines: { level: string; msg: string }[] } {
  const lines: { level: string; msg: string }[] = [];
  const at = (level: string) => (msg: string) => void lines.push({ level, msg });
  const logger = { lines, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), child: () => logger, pino: undefined as never };
  return logger;
}

describe("waits", () => {
  const unanswered = () => new Error("Query read timeout");

  it("when the database does not answer several times in a row, then one warn when the wait begins and one info when it ends", () => {
    const logger = recordingLogger();
    const wait = waits(logger, "job queue", "job queue could not claim");
    wait.failed(unanswered());
    wait.failed(Object.assign(new Error("connect"), { code: "ECONNREFUSED" }));
    wait.failed(unanswered());
    wait.succeeded();
    wait.succeeded();
    expect(logger.lines).toEqual([
      { level: "warn", msg: "job queue waits: the database does not answer in time; retrying" },
      { level: "info", msg: "job queue works again" },
    ]);
  });

  it("when a failure is not one a retry outlives, then it is an error each time", () => {
    const logger = recordingLogger();
    const wait = waits(logger, "job queue", "job queue could not claim");
    wait.failed(new Error("relation \"Job\" does not exist"));
    wait.failed(new Error("relation \"Job\" does not exist"));
    expect(logger.lines).toEqual([
      { level: "error", msg: "job queue could not claim" },
      { level: "error", msg: "job queue could not claim" },
    ]);
  });

  it("when logAtLevelOf gets a timeout, then warn; anything else, error", () => {
    const logger = recordingLogger();
    logAtLevelOf(unanswered(), logger, "job lease renewal failed", {});
    logAtLevelOf(new Error("boom"), logger, "job lease renewal failed", {});
    expect(logger.lines.map((l) => l.level)).toEqual(["warn", "error"]);
  });
});

describe("throughWaits", () => {
  const options = (logger: Logger, extra: Partial<Parameters<typeof throughWaits>[1]> = {}) => ({ logger, what: "preparing the demo account", boundMs: 60_000, pauseMs: 1, ...extra });

  it("when the database does not answer twice and then does, then the work is done on the third try with one warn and one info", async () => {
    const logger = recordingLogger();
    let tries = 0;
    const result = await throughWaits(async () => {
      if (++tries < 3) throw new Error("Unable to start a transaction in the given time");
      return "seeded";
    }, options(logger));
    expect(result).toBe("seeded");
    expect(tries).toBe(3);
    expect(logger.lines.map((line) => line.level)).toEqual(["warn", "info"]);
  });

  it("when the work fails for another reason, then that error ends it at once", async () => {
    let tries = 0;
    const refused = throughWaits(async () => {
      tries++;
      throw new Error("null value in column violates not-null constraint");
    }, options(recordingLogger()));
    await expect(refused).rejects.toThrow(/not-null/);
    expect(tries).toBe(1);
  });

  it("when the service is stopping or the bound has passed, then the wait ends with the database's error", async () => {
    let tries = 0;
    const unanswered = async () => {
      tries++;
      throw new Error("Query read timeout");
    };
    await expect(throughWaits(unanswered, options(recordingLogger(), { giveUp: () => tries >= 2 }))).rejects.toThrow(/read timeout/);
    expect(tries).toBe(2);
    await expect(throughWaits(unanswered, options(recordingLogger(), { boundMs: 0 }))).rejects.toThrow(/read timeout/);
    expect(tries).toBe(3);
  });
});

describe("runPeriodically (the digest and retention scheduling)", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());
  const HOUR = 3_600_000;

  it("when a run fails because the database does not answer, then the log line says when it is retried, the retries back off, and a success goes back to the interval", async () => {
    const logger = recordingLogger();
    const outcomes = ["timeout", "timeout", "ok", "ok"];
    const calls: number[] = [];
    const started = Date.now();
    const scheduler = runPeriodically("retention scheduling", async () => {
      calls.push(Date.now() - started);
      if (outcomes.shift() === "timeout") throw new Error("Unable to start a transaction in the given time");
    }, HOUR, logger);
    await vi.advanceTimersByTimeAsync(HOUR + 1);
    scheduler.stop();
    expect(calls).toEqual([0, FIRST_RETRY_MS, 3 * FIRST_RETRY_MS, HOUR]);
    expect(logger.lines).toEqual([
      { level: "warn", msg: "retention scheduling failed; retrying in 60 s" },
      { level: "warn", msg: "retention scheduling failed; retrying in 120 s" },
    ]);
  });

  it("when it is stopped while a retry waits, then the retry does not run", async () => {
    let calls = 0;
    const scheduler = runPeriodically("digest scheduling", async () => {
      calls++;
      throw new Error("Query read timeout");
    }, HOUR, recordingLogger());
    await vi.advanceTimersByTimeAsync(1);
    scheduler.stop();
    await vi.advanceTimersByTimeAsync(2 * HOUR);
    expect(calls).toBe(1);
  });
});

describe("a PostgreSQL server that cannot be used, at start", () => {
  const run = promisify(execFile);
  const root = join(import.meta.dirname, "..");
  // far longer than the bound below: the old order (the probe after the service's modules) would wait it out
  const PRISMA_DELAY_MS = 60_000;
  const BOUND_MS = 15_000;

  it("when the port refuses, then its one line comes within 15 s, before the service's modules (Prisma) have loaded, and the exit code is 1", async () => {
    const began = performance.now();
    const outcome = await run(process.execPath, ["--import", "tsx", "--import", "./test/fixtures/slow-prisma.mjs", "server/main.ts"], {
      cwd: root,
      env: hermeticEnv({ PATH: process.env.PATH, HOME: process.env.HOME, PORT: "0", HOST: "127.0.0.1", SEED_DEMO: "0", SLOW_PRISMA_MS: String(PRISMA_DELAY_MS), DATABASE_URL: "postgresql://postgres@127.0.0.1:1/none" }),
      timeout: PRISMA_DELAY_MS - 5_000,
    }).then(
      () => ({ code: 0, stderr: "" }),
      (error: { code: number | string; stderr: string; killed?: boolean }) => ({ code: error.killed ? "killed (timeout)" : error.code, stderr: error.stderr }),
    );
    const seconds = (performance.now() - began) / 1000;
    expect(outcome).toEqual({ code: 1, stderr: expect.stringMatching(/^no PostgreSQL server answers at 127\.0\.0\.1:1 \(ECONNREFUSED\): start it/) });
    expect(outcome.stderr.trim().split("\n")).toHaveLength(1);
    expect(seconds).toBeLessThan(BOUND_MS / 1000);
  }, 90_000);
});
