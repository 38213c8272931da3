// The operator CLI's command line (scripts/admin.ts): help, and mistakes named with the nearest
// right word, and a database that does not answer. None of these reaches a database
// (test/operator-cli.test.ts runs commands on one).
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { hermeticEnv } from "./support/config.ts";
import { builtProgram } from "./support/server-process.ts";

const run = promisify(execFile);
const ADMIN = builtProgram("scripts/admin");
const root = path.resolve(import.meta.dirname, "..");
// a process of its own each: slow on a busy machine
const slow = 60_000;

/** The command's exit code and output, also when it fails; a database it tried to open would not answer. */
const admin = (...args: string[]) =>
  run(ADMIN[0]!, [...ADMIN.slice(1), ...args], {
    cwd: root,
    env: hermeticEnv({ PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: "postgresql://postgres@127.0.0.1:1/none" }),
    timeout: slow,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );

const GENERAL_USAGE = "usage: npm run admin -- <command> [options] [--json]";

describe("admin command line", () => {
  it("when --help is asked, then every command is listed with its options and the exit code is 0", async () => {
    const { code, stdout } = await admin("--help");
    expect(code).toBe(0);
    for (const command of ["account create", "keys create", "contacts import", "credits set-limit", "networks set-type", "networks remove"]) {
      expect(stdout).toContain(`  ${command} `);
    }
  }, slow);

  it("when one command's --help is asked, then its options are shown", async () => {
    const { code, stdout } = await admin("networks", "set-type", "--help");
    expect(code).toBe(0);
    expect(stdout.trim()).toBe("usage: npm run admin -- networks set-type --asn N --type business|government|isp|hosting|mobile|education [--note TEXT] [--json]");
  }, slow);

  it("when a command group's --help is asked, then its commands are listed with their options and the exit code is 0", async () => {
    for (const group of ["dead-letters", "keys"]) {
      const { code, stdout } = await admin(group, "--help");
      expect(code).toBe(0);
      expect(stdout).toContain(`  ${group} list `);
      expect(stdout).not.toContain("  account create");
    }
    expect((await admin("dead-letters", "--help")).stdout).toContain("  dead-letters replay ID | --all [--code SQLSTATE]");
  }, slow);

  it("when dead-letters replay names neither an id nor --all, or both, then it says so before opening the database, exit 2", async () => {
    const [neither, both] = await Promise.all([admin("dead-letters", "replay"), admin("dead-letters", "replay", "7", "--all")]);
    expect([neither.code, both.code]).toEqual([2, 2]);
    expect(neither.stderr.split("\n")[0]).toBe("name the dead letter, or replay them all: dead-letters replay ID | --all");
    expect(both.stderr.split("\n")[0]).toBe("replay either one ID or --all (with --code, --limit), not both");
  }, slow);

  it("when no command is named, then the usage goes to stderr and the exit code is 2", async () => {
    const { code, stdout, stderr } = await admin();
    expect({ code, stdout }).toEqual({ code: 2, stdout: "" });
    expect(stderr).toContain(GENERAL_USAGE);
  }, slow);

  it("when the command's first word is misspelt, then it is named with the nearest command, the usage follows, exit 2", async () => {
    const { code, stderr } = await admin("acount", "create", "--name", "x");
    expect(code).toBe(2);
    expect(stderr.split("\n")[0]).toBe("unknown command 'acount'; did you mean 'account'?");
    expect(stderr.split("\n")[1]).toBe(GENERAL_USAGE);
  }, slow);

  it("when the sub-command is misspelt, then both words are named with the nearest sub-command, exit 2", async () => {
    const { code, stderr } = await admin("keys", "lst", "--account", "acc_x");
    expect(code).toBe(2);
    expect(stderr.split("\n")[0]).toBe("unknown command 'keys lst'; did you mean 'keys list'?");
    expect(stderr).toContain(GENERAL_USAGE);
  }, slow);

  it("when a word is far from every command, then it is named without a guess, exit 2", async () => {
    const { code, stderr } = await admin("xyzzy");
    expect(code).toBe(2);
    expect(stderr.split("\n")[0]).toBe("unknown command 'xyzzy'");
  }, slow);

  it("when a command's first word comes alone, then its sub-commands are named, exit 2", async () => {
    const { code, stderr } = await admin("keys");
    expect(code).toBe(2);
    expect(stderr.split("\n")[0]).toBe("'keys' needs a sub-command: create, list, revoke");
  }, slow);

  it("when an option is misspelt, then it is named with the command's nearest option and that command's usage, no stack trace, exit 2", async () => {
    const { code, stdout, stderr } = await admin("keys", "list", "--acount", "x");
    expect({ code, stdout }).toEqual({ code: 2, stdout: "" });
    expect(stderr).toBe(
      "unknown option '--acount' for 'keys list'; did you mean '--account'?\nusage: npm run admin -- keys list --account ID [--json]\n",
    );
  }, slow);

  it("when an option belongs to another command, then this command refuses it, exit 2", async () => {
    const { code, stderr } = await admin("keys", "list", "--account", "acc_x", "--limit", "5");
    expect(code).toBe(2);
    expect(stderr.split("\n")[0]).toBe("unknown option '--limit' for 'keys list'");
  }, slow);

  it("when an option lacks its value, then it is named, exit 2", async () => {
    const { code, stderr } = await admin("keys", "list", "--account");
    expect(code).toBe(2);
    expect(stderr.split("\n")[0]).toBe("option '--account' needs a value");
  }, slow);

  it("when a required option is missing, then it is named with the command's usage, exit 2", async () => {
    const { code, stderr } = await admin("credits", "set-limit", "--dataset", "ds_x");
    expect(code).toBe(2);
    expect(stderr).toBe("--limit is required\nusage: npm run admin -- credits set-limit --dataset ID --limit N [--json]\n");
  }, slow);

  it("when the database cannot be reached, then one line says so, no stack trace, exit 1", async () => {
    const { code, stdout, stderr } = await admin("keys", "list", "--account", "acc_x");
    expect({ code, stdout }).toEqual({ code: 1, stdout: "" });
    expect(stderr).toMatch(/^the database cannot be opened: .*127\.0\.0\.1:1\b.*\n$/);
  }, slow);

  it("when an extra operand follows, then it is named, exit 2", async () => {
    const { code, stderr } = await admin("contacts", "import", "a.ndjson", "b.ndjson");
    expect(code).toBe(2);
    expect(stderr.split("\n")[0]).toBe("unexpected argument 'b.ndjson' for 'contacts import'");
  }, slow);
});
