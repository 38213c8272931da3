// The operator CLI (scripts/admin.ts) beside a running service: on the embedded database it
// connects to the socket the service's database process serves; on PostgreSQL to DATABASE_URL.
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateProfile } from "../server/contacts/generate.ts";
import { hermeticEnv } from "./support/config.ts";
import { builtProgram, type ServerDatabase, type ServerProcess, prepareServerDatabase, processTestBound, startServerProcess } from "./support/server-process.ts";

const run = promisify(execFile);
const ADMIN = builtProgram("scripts/admin");
const root = path.resolve(import.meta.dirname, "..");
// Each command is a process of its own, and the service one more: slow on a busy machine.
const slow = processTestBound(1);

let database: ServerDatabase;
let service: ServerProcess;

beforeAll(async () => {
  database = await prepareServerDatabase();
  service = await startServerProcess(database.envFor(0));
}, slow);
afterAll(async () => {
  await service?.stop("SIGTERM");
  await database?.close();
}, slow);

const admin = (...args: string[]) =>
  run(ADMIN[0]!, [...ADMIN.slice(1), ...args], {
    cwd: root,
    env: hermeticEnv({ PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: "", ...database.envFor(0) }),
    timeout: slow,
  });

/** The command's exit code and output, also when it fails. */
const outcome = (...args: string[]) =>
  admin(...args).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );

const userDatasets = (key: string) =>
  fetch(
    `http://127.0.0.1:${service.port}/v1/user-datasets?accountId=${database.tenant.accountId}&email=${encodeURIComponent(database.tenant.admin.email)}`,
    { headers: { "x-api-key": key } },
  );

describe("operator commands beside a running service", () => {
  it("when keys create runs while the service runs, then it succeeds and the running service accepts the new key", async () => {
    const { code, stdout } = await outcome("keys", "create", "--account", database.tenant.accountId, "--label", "second", "--json");
    expect(code).toBe(0);
    const { key } = JSON.parse(stdout) as { key: string };
    expect((await userDatasets(key)).status).toBe(200);
  }, slow);

  it("when contacts import runs while the service runs, then the service finds the imported profile", async () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), "cli-import-")), "one.ndjson");
    const profile = generateProfile(77, 3);
    writeFileSync(file, `${JSON.stringify(profile)}\n`);
    expect((await outcome("contacts", "import", file)).code).toBe(0);
    const res = await fetch(`http://127.0.0.1:${service.port}/v1/email-lookup`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": database.tenant.key },
      body: JSON.stringify({ email: profile.email }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(profile);
  }, slow);

  it("when a command names an unknown account, then it prints one line saying so and exits 1", async () => {
    const { code, stdout, stderr } = await outcome("keys", "create", "--account", "acc_unknown", "--label", "x");
    expect({ code, stdout, stderr }).toEqual({ code: 1, stdout: "", stderr: "no account acc_unknown\n" });
  }, slow);

  it("when a command names an unknown dataset, then it prints one line saying so and exits 1", async () => {
    const { code, stdout, stderr } = await outcome("credits", "set-limit", "--dataset", "ds_unknown", "--limit", "5");
    expect({ code, stdout, stderr }).toEqual({ code: 1, stdout: "", stderr: "no dataset ds_unknown\n" });
  }, slow);

  it("when dead-letters list and drop run beside the service, then list prints the dead letters as JSON and drop of an unknown id says so in one line, exit 1", async () => {
    const listed = await outcome("dead-letters", "list", "--json");
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([]);
    const { code, stdout, stderr } = await outcome("dead-letters", "drop", "987654321");
    expect({ code, stdout, stderr }).toEqual({ code: 1, stdout: "", stderr: "no dead letter 987654321\n" });
    expect((await outcome("dead-letters", "replay")).stderr).toMatch(/^name the dead letter, or replay them all: dead-letters replay ID \| --all\n/);
  }, slow);
});
