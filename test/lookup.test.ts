// Lookup API: lookupEmail (POST) and lookupEmailByQuery (GET). A found profile costs exactly one
// credit, a miss or a contradicting hint none; the charge and its ledger entry go together.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ContactProfile } from "../server/contacts/profile.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { eventually } from "./support/eventually.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";
import * as contacts from "../server/services/contacts.ts";
import * as credits from "../server/services/credits.ts";
import * as accounts from "../server/services/accounts.ts";

/** A clock the tests move (month ends, key expiry); it runs from a fixed instant. */
let clock = new Date("2026-03-10T12:00:00.000Z");
const now = () => clock;

let api: TestApi;
let tenant: Tenant;
let other: Tenant;
let baseUrl: string;

beforeAll(async () => {
  api = await startTestApi({ now });
  tenant = await createTenant(api.services, "Acme");
  other = await createTenant(api.services, "Globex");
  await contacts.upsertMany(api.services, [jane, max]);
  baseUrl = await api.listen();
});
afterAll(async () => {
  await api?.close();
});

const jane: ContactProfile = {
  email: "jane.doe@acme.example",
  fullName: "Jane Marie Doe",
  headline: "Head of Marketing at Acme Corporation",
  linkedinUrl: "https://www.linkedin.com/in/jane-doe-example",
  seniority: "director",
  jobFunction: "marketing",
  location: "Berlin, Germany",
  languages: [
    { name: "English", proficiency: "native" },
    { name: "German", proficiency: "professional" },
  ],
  experience: [
    { title: "Head of Marketing", companyName: "Acme Corporation", startYear: 2021, current: true },
    { title: "Marketing Manager", companyName: "Globex GmbH", startYear: 2016, endYear: 2021, current: false },
  ],
};

/** Only the required fields: the optional ones are absent from the answer, not null. */
const max: ContactProfile = {
  email: "max.mueller@mail.example",
  fullName: "Max Müller-Lüdenscheidt",
  languages: [],
  experience: [{ title: "Engineer", companyName: "Initech Inc", current: true }],
};

const as = (key: string) => ({ "x-api-key": key });
const lookup = (t: Tenant, body: object, datasetId?: string) =>
  api
    .request()
    .post(`/v1/email-lookup${datasetId ? `?datasetId=${datasetId}` : ""}`)
    .set(as(t.key))
    .send(body);

const ledger = (accountId: string) =>
  api.db.prisma.creditLedgerEntry.findMany({ where: { accountId }, orderBy: { id: "asc" } });
const usage = (datasetId: string) => api.db.prisma.creditUsage.findMany({ where: { datasetId }, select: { month: true, used: true } });

/** A tenant of its own, so that credit counts start at zero. */
async function freshTenant(name: string, limits?: [number, number]): Promise<Tenant> {
  const t = await createTenant(api.services, name);
  if (limits) for (const [i, limit] of limits.entries()) await credits.setMonthlyLimit(api.services, t.datasets[i]!, limit);
  return t;
}

const noCredit = { error: "credit_limit_exceeded", message: expect.any(String) };
const missed = { error: "profile_not_found", message: expect.any(String) };

describe("lookupEmail", () => {
  it("when the e-mail has a profile, then 200 with exactly that profile and one ledger entry of 1 credit", async () => {
    const t = await freshTenant("Hit");
    const res = await lookup(t, { email: "Jane.Doe@ACME.example" }, t.datasets[1]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(jane);
    const key = await api.db.prisma.apiKey.findFirst({ where: { accountId: t.accountId }, select: { id: true } });
    expect(await ledger(t.accountId)).toEqual([
      {
        id: expect.any(BigInt),
        accountId: t.accountId,
        datasetId: t.datasets[1],
        createdAt: clock,
        credits: 1,
        operation: "lookupEmail",
        keyId: key!.id,
      },
    ]);
    expect(await usage(t.datasets[1])).toEqual([{ month: new Date("2026-03-01"), used: 1 }]);
  });

  it("when the profile lacks optional fields, then they are absent from the answer", async () => {
    const t = await freshTenant("Sparse");
    const res = await lookup(t, { email: max.email });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(max);
    expect(Object.keys(res.body).sort()).toEqual(["email", "experience", "fullName", "languages"]);
  });

  it("when no profile has the e-mail, then 404 profile_not_found and nothing is charged", async () => {
    const t = await freshTenant("Miss");
    const res = await lookup(t, { email: "nobody@acme.example" });
    expect(res.status).toBe(404);
    expect(res.body).toEqual(missed);
    expect(await ledger(t.accountId)).toEqual([]);
    expect(await usage(t.datasets[0])).toEqual([]);
  });

  it("when one look-up finds a profile and another misses, then the credits_charged_total metric grows by one", async () => {
    // as Prometheus scrapes it: GET /metrics
    const charged = async () => Number(/^credits_charged_total (\S+)$/m.exec((await api.request().get("/metrics")).text)?.[1] ?? 0);
    const t = await freshTenant("Metric");
    const before = await charged();
    expect((await lookup(t, { email: jane.email })).status).toBe(200);
    expect((await lookup(t, { email: "nobody@acme.example" })).status).toBe(404);
    expect(await charged()).toBe(before + 1);
  });

  it.each([
    ["the first name", { firstName: "jane" }],
    ["the first names", { firstName: "Jane Marie" }],
    ["an initial", { firstName: "J." }],
    ["the last name", { lastName: "DOE" }],
    ["the current company with another legal form", { companyName: "ACME, Inc." }],
    ["a past company", { companyName: "Globex" }],
    ["the e-mail's domain", { companyDomain: "acme.example" }],
    ["a domain naming a company of the profile", { companyDomain: "www.globex.example" }],
    ["all hints at once", { firstName: "Jane", lastName: "Doe", companyName: "Acme Corporation", companyDomain: "acme.example" }],
  ])("when the hints confirm the profile (%s), then 200 and 1 credit", async (_case, hints) => {
    const t = await freshTenant(`Confirm ${_case}`);
    const res = await lookup(t, { email: jane.email, ...hints });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(jane);
    expect((await ledger(t.accountId)).map((e) => e.credits)).toEqual([1]);
  });

  it("when name hints differ only in accents and punctuation, then they confirm", async () => {
    const t = await freshTenant("Accents");
    const res = await lookup(t, { email: max.email, firstName: "MAX", lastName: "Muller Ludenscheidt", companyDomain: "initech.example" });
    expect(res.status).toBe(200);
    expect((await ledger(t.accountId)).length).toBe(1);
  });

  it.each([
    ["another first name", { firstName: "John" }],
    ["another last name", { lastName: "Smith" }],
    ["the first name given as last name", { lastName: "Jane" }],
    ["a company the profile never worked for", { companyName: "Umbrella Corporation" }],
    ["an unrelated domain", { companyDomain: "umbrella.example" }],
    ["one contradicting hint among confirming ones", { firstName: "Jane", lastName: "Doe", companyName: "Initech" }],
  ])("when a hint contradicts the profile (%s), then 404 profile_not_found and nothing is charged", async (_case, hints) => {
    const t = await freshTenant(`Contradict ${_case}`);
    const res = await lookup(t, { email: jane.email, ...hints });
    expect(res.status).toBe(404);
    expect(res.body).toEqual(missed);
    expect(await ledger(t.accountId)).toEqual([]);
  });

  it("when datasetId is omitted, then the oldest dataset with credit left pays, and the next one once it is spent", async () => {
    const t = await freshTenant("Fallback", [1, 5]);
    const first = await lookup(t, { email: jane.email });
    const second = await lookup(t, { email: jane.email });
    expect([first.status, second.status]).toEqual([200, 200]);
    expect((await ledger(t.accountId)).map((e) => e.datasetId)).toEqual([t.datasets[0], t.datasets[1]]);
  });

  it("when the named dataset has no credit left, then 402 and nothing is charged, though another dataset has credit", async () => {
    const t = await freshTenant("Spent", [0, 5]);
    const res = await lookup(t, { email: jane.email }, t.datasets[0]);
    expect(res.status).toBe(402);
    expect(res.body).toEqual(noCredit);
    expect(await ledger(t.accountId)).toEqual([]);
  });

  it("when no dataset of the account has credit left, then 402, also for an address without profile (credit is checked first)", async () => {
    const t = await freshTenant("Broke", [1, 0]);
    expect((await lookup(t, { email: jane.email })).status).toBe(200);
    const hit = await lookup(t, { email: jane.email });
    const miss = await lookup(t, { email: "nobody@acme.example" });
    expect([hit.status, miss.status]).toEqual([402, 402]);
    expect(hit.body).toEqual(noCredit);
    expect((await ledger(t.accountId)).length).toBe(1);
    expect(await usage(t.datasets[0])).toEqual([{ month: new Date("2026-03-01"), used: 1 }]);
  });

  it("when datasetId is another account's dataset, then 404 not_found and neither account is charged", async () => {
    const t = await freshTenant("Foreign");
    const res = await lookup(t, { email: jane.email }, other.datasets[0]);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
    expect(await ledger(t.accountId)).toEqual([]);
    expect(await usage(other.datasets[0])).toEqual([]);
  });

  it("when datasetId does not exist, then 404 not_found", async () => {
    const res = await lookup(tenant, { email: jane.email }, "ds_doesnotexist0000");
    expect(res.status).toBe(404);
    expect(res.body.error).toBe("not_found");
  });

  it("when charges fall on either side of a UTC month's end, then they count against different months", async () => {
    const t = await freshTenant("Month end", [1, 0]);
    try {
      clock = new Date("2026-01-31T23:59:59.999Z");
      expect((await lookup(t, { email: jane.email })).status).toBe(200);
      expect((await lookup(t, { email: jane.email })).status).toBe(402);
      clock = new Date("2026-02-01T00:00:00.000Z");
      expect((await lookup(t, { email: jane.email })).status).toBe(200);
      expect((await lookup(t, { email: jane.email })).status).toBe(402);
    } finally {
      clock = new Date("2026-03-10T12:00:00.000Z");
    }
    expect((await ledger(t.accountId)).map((e) => e.createdAt.toISOString())).toEqual([
      "2026-01-31T23:59:59.999Z",
      "2026-02-01T00:00:00.000Z",
    ]);
    expect(await usage(t.datasets[0])).toEqual(
      expect.arrayContaining([
        { month: new Date("2026-01-01"), used: 1 },
        { month: new Date("2026-02-01"), used: 1 },
      ]),
    );
  });

  it.each([
    ["the e-mail is missing", { firstName: "Jane" }, "email"],
    ["the e-mail is not an address", { email: "jane.doe" }, "email"],
    ["a hint is empty", { email: jane.email, lastName: "" }, "lastName"],
    ["the domain hint is not a host name", { email: jane.email, companyDomain: "not a domain" }, "companyDomain"],
    ["the body has an undeclared field", { email: jane.email, phone: "+1 555" }, ""],
  ])("when %s, then 400 naming the field and nothing is charged", async (_case, body, field) => {
    const t = await freshTenant(`Invalid ${_case}`);
    const res = await lookup(t, body);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("validation_failed");
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "body", field: expect.stringContaining(field) }));
    expect(await ledger(t.accountId)).toEqual([]);
  });

  it("when the account's licence has lapsed, then 403 no_valid_licence and nothing is charged", async () => {
    const t = await freshTenant("Lapsed");
    await accounts.setLicence(api.services, t.accountId, new Date(Date.now() - 86_400_000));
    const res = await lookup(t, { email: jane.email });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: "no_valid_licence", message: expect.any(String) });
    expect(await ledger(t.accountId)).toEqual([]);
  });
});

/** N simultaneous requests over real sockets: on PostgreSQL each runs in its own connection. */
async function parallel(n: number, send: (i: number) => Promise<Response>): Promise<{ status: number; body: unknown }[]> {
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const res = await send(i);
      return { status: res.status, body: await res.json() };
    }),
  );
}

const post = (t: Tenant, body: object, headers: Record<string, string> = {}) =>
  fetch(`${baseUrl}/v1/email-lookup`, {
    method: "POST",
    headers: { "content-type": "application/json", ...as(t.key), ...headers },
    body: JSON.stringify(body),
  });

const onPostgres = !!process.env.TEST_DATABASE_URL;

/**
 * PostgreSQL only: locks the dataset's usage row for this month from another connection, so that
 * every charge statement blocks on it; once `n` of them wait, they are released at once and race.
 */
async function gate(url: string, datasetId: string, n: number): Promise<() => Promise<void>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`INSERT INTO "CreditUsage" ("datasetId", month, used) VALUES ($1, '2026-03-01', 0)`, [datasetId]);
  await client.query("BEGIN");
  await client.query(`SELECT 1 FROM "CreditUsage" WHERE "datasetId" = $1 FOR UPDATE`, [datasetId]);
  // pg_stat_activity is a snapshot per transaction: clear it before each look
  const waiting = async () => {
    await client.query("SELECT pg_stat_clear_snapshot()");
    const { rows } = await client.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`,
    );
    return rows[0].n as number;
  };
  return async () => {
    try {
      await eventually(async () => expect(await waiting(), "charges waiting for the lock").toBeGreaterThanOrEqual(n), { intervalMs: 10 });
    } finally {
      await client.query("COMMIT");
      await client.end();
    }
  };
}

describe("lookupEmail under concurrency", () => {
  const K = 3;
  const N = 12;
  async function exactlyKSucceed() {
    const t = await freshTenant(`Race ${onPostgres ? "pg" : "pglite"}`, [K, 0]);
    const release = api.db.url ? await gate(api.db.url, t.datasets[0], N) : async () => {};
    const pending = parallel(N, () => post(t, { email: jane.email }));
    await release();
    const answers = await pending;
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([...Array(K).fill(200), ...Array(N - K).fill(402)]);
    for (const a of answers) expect(a.body).toEqual(a.status === 200 ? jane : noCredit);
    expect((await ledger(t.accountId)).length).toBe(K);
    expect(await usage(t.datasets[0])).toEqual([{ month: new Date("2026-03-01"), used: K }]);
  }

  it.runIf(!onPostgres)(
    `when ${N} found lookups arrive at once with ${K} credits left (PGlite: one connection, so serial), then exactly ${K} are charged and the rest get 402`,
    exactlyKSucceed,
  );
  const onPostgresTitle = `when ${N} found lookups race for ${K} credits on PostgreSQL (all released at once from the locked usage row), then exactly ${K} are charged and the rest get 402`;
  it.skipIf(!onPostgres)(onPostgres ? onPostgresTitle : `${onPostgresTitle} [skipped: TEST_DATABASE_URL is not set]`, exactlyKSucceed);
});

describe("lookupEmail with Idempotency-Key", () => {
  const withKey = (t: Tenant, key: string, body: object, datasetId?: string) =>
    lookup(t, body, datasetId).set("Idempotency-Key", key);

  it("when a found lookup is retried with the same key and body, then the first answer is replayed and 1 credit is charged in all", async () => {
    const t = await freshTenant("Retry");
    const first = await withKey(t, "retry-1", { email: jane.email, firstName: "Jane" });
    const again = await withKey(t, "retry-1", { firstName: "Jane", email: jane.email });
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(again.text).toBe(first.text);
    expect((await ledger(t.accountId)).length).toBe(1);
  });

  it("when the same key comes with another body, then 409 idempotency_key_reused and nothing more is charged", async () => {
    const t = await freshTenant("Reuse");
    expect((await withKey(t, "reuse-1", { email: jane.email })).status).toBe(200);
    const res = await withKey(t, "reuse-1", { email: max.email });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: "idempotency_key_reused", message: expect.any(String) });
    const otherDataset = await withKey(t, "reuse-1", { email: jane.email }, t.datasets[1]);
    expect(otherDataset.status).toBe(409);
    expect((await ledger(t.accountId)).length).toBe(1);
  });

  it("when a miss and a 402 are retried, then their answers are replayed, also after credit was added", async () => {
    const t = await freshTenant("Replay errors", [0, 0]);
    const spent = await withKey(t, "spent-1", { email: jane.email });
    await credits.setMonthlyLimit(api.services, t.datasets[0], 10);
    const replayed = await withKey(t, "spent-1", { email: jane.email });
    expect([spent.status, replayed.status]).toEqual([402, 402]);
    expect(replayed.body).toEqual(spent.body);
    const miss = await withKey(t, "miss-1", { email: "nobody@acme.example" });
    const missAgain = await withKey(t, "miss-1", { email: "nobody@acme.example" });
    expect([miss.status, missAgain.status]).toEqual([404, 404]);
    expect(missAgain.body).toEqual(missed);
    expect(await ledger(t.accountId)).toEqual([]);
  });

  it("when concurrent requests carry one key, then all get the same 200 answer and 1 credit is charged", async () => {
    const t = await freshTenant("Concurrent key");
    const answers = await parallel(8, () => post(t, { email: jane.email }, { "Idempotency-Key": "same-key" }));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    for (const a of answers) expect(a.body).toEqual(jane);
    expect((await ledger(t.accountId)).length).toBe(1);
  });

  it("when another account uses the same key, then it is a different key", async () => {
    const a = await freshTenant("Key owner A");
    const b = await freshTenant("Key owner B");
    expect((await withKey(a, "shared-name", { email: jane.email })).status).toBe(200);
    expect((await withKey(b, "shared-name", { email: max.email })).status).toBe(200);
    expect((await ledger(a.accountId)).length).toBe(1);
    expect((await ledger(b.accountId)).length).toBe(1);
  });

  it("when a key is reused after 24 hours, then it is new again and the request runs", async () => {
    const t = await freshTenant("Expiry");
    try {
      expect((await withKey(t, "day-old", { email: jane.email })).status).toBe(200);
      clock = new Date(clock.getTime() + 24 * 3_600_000 - 1);
      expect((await withKey(t, "day-old", { email: max.email })).status).toBe(409);
      clock = new Date(clock.getTime() + 1);
      const res = await withKey(t, "day-old", { email: max.email });
      expect(res.status).toBe(200);
      expect(res.body).toEqual(max);
    } finally {
      clock = new Date("2026-03-10T12:00:00.000Z");
    }
    expect((await ledger(t.accountId)).length).toBe(2);
  });

  it("when the key is not printable ASCII, then 400 naming the header", async () => {
    const res = await lookup(tenant, { email: jane.email }).set("Idempotency-Key", "has space");
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "header" }));
  });
});

describe("lookupEmailByQuery", () => {
  const get = (t: Tenant, query: string) => api.request().get(`/v1/email-lookup?${query}`).set(as(t.key));

  it("when the e-mail carries a raw @, then 200, 1 credit charged as lookupEmailByQuery, and the address is in no log line", async () => {
    const t = await freshTenant("Query");
    const res = await get(t, `email=${jane.email}&lastName=Doe`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(jane);
    expect((await ledger(t.accountId)).map((e) => e.operation)).toEqual(["lookupEmailByQuery"]);
    const lines = api.logs.filter((l) => l.includes(res.headers["x-request-id"]!));
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      expect(line).not.toContain("jane");
      expect(JSON.parse(line).path).toBe("/v1/email-lookup");
    }
  });

  it("when the e-mail is percent-encoded and names a dataset, then that dataset pays", async () => {
    const t = await freshTenant("Query encoded");
    const res = await get(t, `email=${encodeURIComponent(jane.email)}&datasetId=${t.datasets[1]}`);
    expect(res.status).toBe(200);
    expect((await ledger(t.accountId)).map((e) => e.datasetId)).toEqual([t.datasets[1]]);
  });

  it("when a hint contradicts the profile, then 404 and nothing is charged", async () => {
    const t = await freshTenant("Query contradict");
    const res = await get(t, `email=${jane.email}&companyName=Umbrella`);
    expect(res.status).toBe(404);
    expect(res.body).toEqual(missed);
    expect(await ledger(t.accountId)).toEqual([]);
  });

  it("when no credit is left, then 402 and nothing is charged", async () => {
    const t = await freshTenant("Query broke", [0, 0]);
    const res = await get(t, `email=${jane.email}`);
    expect(res.status).toBe(402);
    expect(res.body).toEqual(noCredit);
    expect(await ledger(t.accountId)).toEqual([]);
  });

  it("when the dataset is another account's, then 404", async () => {
    const res = await get(tenant, `email=${jane.email}&datasetId=${other.datasets[1]}`);
    expect(res.status).toBe(404);
    expect(res.body.error).toBe("not_found");
  });

  it("when the e-mail is missing, then 400 naming it in query", async () => {
    const res = await get(tenant, "firstName=Jane");
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "query", field: "email" }));
  });

  it("when the licence has lapsed, then 403", async () => {
    const t = await freshTenant("Query lapsed");
    await accounts.setLicence(api.services, t.accountId, new Date(Date.now() - 86_400_000));
    const res = await get(t, `email=${jane.email}`);
    expect(res.status).toBe(403);
    expect(res.body.error).toBe("no_valid_licence");
  });
});
