// The contact store's operator side: the streaming import (NDJSON and CSV), the deterministic
// generator, and the admin commands around them.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateProfile, writeProfiles } from "../server/contacts/generate.ts";
import { ImportFileError, importContacts } from "../server/contacts/import.ts";
import { checkProfile } from "../server/contacts/profile.ts";
import { openDatabase } from "../server/db/database.ts";
import { createServices } from "../server/services/index.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { migratedDataDir } from "./support/database.ts";
import { hermeticEnv, testConfig } from "./support/config.ts";
import { builtProgram } from "./support/server-process.ts";
import * as contacts from "../server/services/contacts.ts";
import * as creditReports from "../server/services/credit-reports.ts";
import * as datasets from "../server/services/datasets.ts";
import * as accounts from "../server/services/accounts.ts";

const run = promisify(execFile);
const ADMIN = builtProgram("scripts/admin");
const root = path.resolve(import.meta.dirname, "..");
const dir = mkdtempSync(path.join(os.tmpdir(), "contacts-"));
let api: TestApi;

beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api?.close());

let files = 0;
function file(name: string, lines: string[]): string {
  const at = path.join(dir, `${++files}-${name}`);
  writeFileSync(at, lines.join("\n") + "\n");
  return at;
}

/** Imports into the test database, collecting the rejected lines. */
async function load(at: string, batchSize = 1000) {
  const rejected: [number, string][] = [];
  const summary = await importContacts({ file: at, store: contacts.importStore(api.services), batchSize, onReject: (line, reason) => rejected.push([line, reason]) });
  return { summary, rejected };
}

const stored = (email: string) => api.db.prisma.contact.findUnique({ where: { email } });

describe("contacts import (NDJSON)", () => {
  const lines = [
    JSON.stringify({ email: "Ada.Lovelace@Engines.example", fullName: "Ada Lovelace", languages: [{ name: "English", proficiency: "native" }], experience: [] }),
    "",
    JSON.stringify({ email: "bad-address", fullName: "No Mail" }),
    '{"email": "half@json.example", ',
    JSON.stringify({ email: "cur@x.example", fullName: "Cur Rent", experience: [{ title: "CEO", companyName: "X", startYear: 2020, endYear: 2024, current: true }] }),
    JSON.stringify({ email: "old@x.example", fullName: "Old Job", experience: [{ title: "CTO", companyName: "Y", startYear: 2020, endYear: 2018, current: false }] }),
    JSON.stringify({ email: "extra@x.example", fullName: "Extra", phone: "+1" }),
    JSON.stringify({ email: "grace@navy.example", fullName: "Grace Hopper", headline: "Rear Admiral", experience: [{ title: "Admiral", companyName: "US Navy", startYear: 1943, current: true }] }),
  ];

  it("when a file mixes valid and invalid lines, then the valid ones are stored and each rejected one is reported with its line number and reason", async () => {
    const { summary, rejected } = await load(file("mixed.ndjson", lines));
    expect(rejected).toEqual([
      [3, "email: must match format \"email\""],
      [4, expect.stringMatching(/^not valid JSON/)],
      [5, "experience[0].endYear: must be absent on a current position"],
      [6, "experience[0].endYear: must not be before startYear"],
      [7, "phone: is not a profile field"],
    ]);
    expect(summary).toMatchObject({ records: 7, rejected: 5, inserted: 2, updated: 0, unchanged: 0 });
    expect(await stored("ada.lovelace@engines.example")).toMatchObject({ fullName: "Ada Lovelace", headline: null, languages: [{ name: "English", proficiency: "native" }] });
    expect(await stored("grace@navy.example")).toMatchObject({ headline: "Rear Admiral" });
    expect(await stored("cur@x.example")).toBeNull();
  });

  it("when the same file is imported again, then nothing is duplicated or changed; a changed profile is updated", async () => {
    const first = file("again.ndjson", lines);
    await load(first);
    const before = await api.db.prisma.contact.count();
    const rerun = await load(first);
    expect(rerun.summary).toMatchObject({ inserted: 0, updated: 0, unchanged: 2 });
    const changed = lines.map((l) => l.replace("Rear Admiral", "Computer scientist"));
    const update = await load(file("changed.ndjson", changed));
    expect(update.summary).toMatchObject({ inserted: 0, updated: 1, unchanged: 1 });
    expect(await api.db.prisma.contact.count()).toBe(before);
    expect(await stored("grace@navy.example")).toMatchObject({ headline: "Computer scientist" });
  });

  it("when an e-mail appears twice, within a batch or across batches, then the later line wins", async () => {
    const profile = (n: number, name: string) => JSON.stringify({ email: `twice${n}@x.example`, fullName: name });
    const { summary } = await load(file("twice.ndjson", [profile(1, "First"), profile(1, "Second"), profile(2, "A"), profile(3, "B"), profile(2, "C")]), 3);
    expect(summary).toMatchObject({ records: 5, superseded: 1, inserted: 3, updated: 1 });
    expect((await stored("twice1@x.example"))?.fullName).toBe("Second");
    expect((await stored("twice2@x.example"))?.fullName).toBe("C");
  });

  it("when the file does not exist, then ImportFileError", async () => {
    await expect(load(path.join(dir, "missing.ndjson"))).rejects.toBeInstanceOf(ImportFileError);
  });
});

describe("contacts import (CSV)", () => {
  it("when a CSV file has the documented columns, JSON in languages and experience and empty cells, then it is stored; bad rows are reported by line", async () => {
    const at = file("people.csv", [
      "fullName,email,location,languages,experience",
      'Linus T,linus@kernel.example,"Portland, United States","[{""name"":""Finnish"",""proficiency"":""native""}]","[{""title"":""Fellow"",""companyName"":""Linux Foundation"",""startYear"":2003,""current"":true}]"',
      "Margaret H,margaret@nasa.example,,,",
      "Broken,broken@x.example,,[not json,",
      "Too,many@x.example,,,,cells",
    ]);
    const { summary, rejected } = await load(at);
    expect(rejected).toEqual([
      [4, expect.stringMatching(/JSON column is not valid JSON/)],
      [5, expect.stringMatching(/Invalid Record Length/)],
    ]);
    expect(summary).toMatchObject({ records: 4, rejected: 2, inserted: 2 });
    expect(await stored("linus@kernel.example")).toMatchObject({
      location: "Portland, United States",
      languages: [{ name: "Finnish", proficiency: "native" }],
      experience: [{ title: "Fellow", companyName: "Linux Foundation", startYear: 2003, current: true }],
    });
    expect(await stored("margaret@nasa.example")).toMatchObject({ location: null, languages: [], experience: [] });
  });

  it("when the header names an unknown column or lacks a required one, then the import stops with ImportFileError naming them", async () => {
    const at = file("header.csv", ["email,name", "x@y.example,X"]);
    await expect(load(at)).rejects.toThrow(/unknown column "name".*missing column "fullName"/);
  });
});

describe("contacts generate", () => {
  it("when profiles are generated twice with one seed, then they are identical; another seed gives others", () => {
    expect(generateProfile(7, 42)).toEqual(generateProfile(7, 42));
    expect(generateProfile(8, 42)).not.toEqual(generateProfile(7, 42));
  });

  it("when 20,000 profiles are generated, then each passes the import's checks and every e-mail is unique", () => {
    const emails = new Set<string>();
    for (let i = 0; i < 20_000; i++) {
      const checked = checkProfile(generateProfile(3, i));
      expect(checked.ok).toBe(true);
      if (checked.ok) emails.add(checked.profile.email);
    }
    expect(emails.size).toBe(20_000);
  });

  it("when a generated NDJSON and a generated CSV file are imported, then both give the same profiles", async () => {
    const ndjson = path.join(dir, "gen.ndjson");
    const csv = path.join(dir, "gen.csv");
    await writeProfiles(ndjson, 11, 300);
    await writeProfiles(csv, 11, 300);
    expect(readFileSync(ndjson, "utf8").trim().split("\n")).toHaveLength(300);
    const a = await load(ndjson, 128);
    expect(a.summary).toMatchObject({ records: 300, rejected: 0, inserted: 300 });
    const b = await load(csv, 128);
    expect(b.summary).toMatchObject({ records: 300, rejected: 0, inserted: 0, updated: 0, unchanged: 300 });
    expect(await contacts.find(api.services, generateProfile(11, 299).email)).toEqual(generateProfile(11, 299));
  });
});

describe("operator commands", () => {
  // Each command is a process of its own on an embedded database: slow on a busy machine.
  const slow = 120_000;
  const dataDir = path.join(dir, "cli-db");
  const admin = (...args: string[]) =>
    run(ADMIN[0]!, [...ADMIN.slice(1), ...args], {
      cwd: root,
      env: hermeticEnv({ ...process.env, DATA_DIR: dataDir, DATABASE_URL: "" }),
    });
  /** Opens the command's database in this process (after the command has exited). */
  async function inDatabase<T>(use: (services: ReturnType<typeof createServices>) => Promise<T>): Promise<T> {
    const db = await openDatabase({ dataDir });
    try {
      await db.migrate();
      return await use(createServices(db.prisma, { config: testConfig() }));
    } finally {
      await db.close();
    }
  }

  let accountId: string;
  let datasetId: string;
  beforeAll(async () => {
    await migratedDataDir(dataDir);
    await inDatabase(async (services) => {
      ({ accountId } = await accounts.createAccount(services, { name: "CLI", licenceDays: 1, admin: { email: "cli@x.example", name: "C" } }));
      datasetId = await datasets.create(services, accountId, "cli@x.example", { name: "Site" });
    });
  }, slow);

  it("when contacts are generated and imported with --progress, then the file is loaded, the bar and the rejects go to stderr, the summary to stdout", async () => {
    const out = path.join(dir, "cli.ndjson");
    await admin("contacts", "generate", "--count", "2000", "--seed", "5", "--out", out);
    writeFileSync(out, readFileSync(out, "utf8") + "{not json}\n");
    const { stdout, stderr } = await admin("contacts", "import", out, "--progress", "--batch-size", "500", "--json");
    expect(JSON.parse(stdout)).toMatchObject({ records: 2001, rejected: 1, inserted: 2000 });
    expect(stderr).toContain("line 2001: not valid JSON");
    expect(stderr).toMatch(/\[#{30}\] 100\.0%/);
    await inDatabase(async (services) => {
      expect(await contacts.count(services)).toBe(2000);
      expect(await contacts.find(services, generateProfile(5, 1999).email)).toEqual(generateProfile(5, 1999));
    });
  }, slow);

  it("when credits set-limit names a dataset, then its monthly limit is set", async () => {
    const { stdout } = await admin("credits", "set-limit", "--dataset", datasetId, "--limit", "25");
    expect(stdout).toContain("25 credits per calendar month");
    const { datasets } = await inDatabase((services) => creditReports.summary(services, accountId, { from: "2026-01-01", to: "2026-01-31" }));
    expect(datasets).toEqual([expect.objectContaining({ datasetId, monthlyLimit: 25, used: 0 })]);
  }, slow);
});
