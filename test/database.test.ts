// The embedded database: one process per data directory, migrations applied once. (Whether the
// migrations match schema.prisma is CI's `npm run migrate:check`.)
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { lockOwner } from "../server/db/data-dir-lock.ts";
import { DatabaseLockedError, openDatabase } from "../server/db/database.ts";
import { hermeticEnv } from "./support/config.ts";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "..");
const dataDir = path.join(mkdtempSync(path.join(os.tmpdir(), "pglite-lock-")), "db");
let first = await openDatabase({ dataDir });
afterAll(() => first.close());

describe("migrations", () => {
  it("when applied twice, then the second run applies nothing", async () => {
    const applied = await first.migrate();
    expect(applied.length).toBeGreaterThan(0);
    expect(await first.migrate()).toEqual([]);
  });
});

describe("embedded database lock", () => {
  it("when another opener takes the same data directory, then it is refused and the first keeps working", async () => {
    await expect(openDatabase({ dataDir })).rejects.toBeInstanceOf(DatabaseLockedError);
    expect(await first.ping()).toBe(true);
  });

  it("when another process opens it, then that process exits 1 with a message naming the owner", async () => {
    const attempt = run(process.execPath, ["--import", "tsx", "scripts/migrations.ts", "apply"], {
      cwd: root,
      env: hermeticEnv({ ...process.env, DATA_DIR: dataDir, DATABASE_URL: "" }),
    });
    const failure = await attempt.then(() => undefined, (error: { code: number; stderr: string }) => error);
    expect(failure?.code).toBe(1);
    // the owner is the process that serves the embedded database for this test file
    expect(failure?.stderr).toContain(`in use by process ${(await lockOwner(dataDir))!.pid}`);
    expect(await first.ping()).toBe(true);
  });

  it("when the lock was left by a process that is gone, then it is taken over", async () => {
    await first.close();
    const child = await run(process.execPath, ["-e", "console.log(process.pid)"]);
    writeFileSync(`${dataDir}.lock`, child.stdout.trim());
    first = await openDatabase({ dataDir }); // the tests after this one go on with it
    expect(await lockOwner(dataDir)).toMatchObject({ pid: expect.any(Number) });
    expect((await lockOwner(dataDir))!.pid).not.toBe(Number(child.stdout.trim()));
    expect(await first.ping()).toBe(true);
  }, 120_000); // starts the data directory's process again: slow on a loaded machine
});
