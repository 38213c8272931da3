// The dead-letter table holds visitors' events (batches set aside by the ingest writer): an
// erasure takes the subject's out of it, an export lists them with what waits in the log, and the
// retention job deletes dead letters after RETENTION_DEAD_LETTER_DAYS or their dataset's retention.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_RETENTION } from "../server/config.ts";
import { retention } from "../server/tracking/privacy/retention.ts";
import type { QueuedBatch } from "../server/tracking/collect/events.ts";
import { as } from "./support/suite.ts";
import { ADDRESSES, startTracking, type TrackingSuite } from "./support/tracking.ts";

let t: TrackingSuite;
beforeAll(async () => {
  t = await startTracking();
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const prisma = () => t.api.db.prisma;
const admin = () => ({ email: t.tenant.admin.email });
const DAY = 86_400_000;

/** A batch of the tenant's first dataset with the given events, as the collector queues it. */
function batchOf(events: QueuedBatch["events"], datasetId = t.tenant.datasets[0]!): QueuedBatch {
  return {
    accountId: t.tenant.accountId,
    datasetId,
    at: new Date().toISOString(),
    enrich: false,
    network: { leadId: "org_deadletterprivacy", organizationName: "Dead Letter Privacy Inc", organizationDomain: null, asn: 714, networkType: "business", country: "US", city: null, ip: ADDRESSES.business },
    events,
  };
}

/** Sets `batches` aside as one dead letter (as the writer does); its id. */
async function deadLetter(batches: QueuedBatch[], failedAt = new Date()): Promise<string> {
  const events = batches.reduce((n, b) => n + b.events.length, 0);
  const [row] = await prisma().$queryRaw<{ id: string }[]>`
    INSERT INTO "IngestDeadLetter" ("log", "accountId", "datasetId", "receivedAt", "failedAt", attempts, error, payload, events)
    VALUES ('postgres', ${batches[0]!.accountId}, ${batches[0]!.datasetId}, ${new Date(batches[0]!.at)}, ${failedAt}, 3, '23502 test', ${JSON.stringify(batches)}::jsonb, ${events})
    RETURNING id::text AS id`;
  return row!.id;
}

async function letter(id: string): Promise<{ events: number; payload: QueuedBatch[] } | undefined> {
  const [row] = await prisma().$queryRaw<{ events: number; payload: QueuedBatch[] }[]>`SELECT events, payload FROM "IngestDeadLetter" WHERE id = ${id}::bigint`;
  return row;
}

const visitorsIn = (payload: QueuedBatch[]) => payload.flatMap((b) => b.events.map((e) => e.visitorId)).sort();

/** A run's visitors: `seen` (a page view), `person` (a page view and a form carrying `email`), `other`. */
function people() {
  const run = randomBytes(4).toString("hex");
  return { seen: `vid_seen_${run}`, person: `vid_person_${run}`, other: `vid_other_${run}`, email: `dl.person.${run}@customer.example` };
}

function mixedLetter(p: ReturnType<typeof people>) {
  return deadLetter([
    batchOf([
      { type: "pageview", visitorId: p.seen, url: "https://www.customer.example/a" },
      { type: "pageview", visitorId: p.person, url: "https://www.customer.example/b" },
      { type: "form", visitorId: p.person, url: "https://www.customer.example/contact", partial: false, fields: { email: p.email.toUpperCase() } },
      { type: "pageview", visitorId: p.other, url: "https://www.customer.example/c" },
    ] as QueuedBatch["events"]),
  ]);
}

describe("exportDataSubject", () => {
  it("when a person's form and page view wait in a dead letter, then the export lists both among queuedEvents and nothing of the other visitors", async () => {
    const p = people();
    await mixedLetter(p);
    const res = await t.api.request().post("/v1/privacy/exports").query(admin()).set(as(t.tenant.key)).send({ subjectEmail: p.email }).expect(200);
    const mine = res.body.queuedEvents.filter((e: { visitorId: string }) => [p.seen, p.person, p.other].includes(e.visitorId));
    expect(mine.map((e: { visitorId: string; type: string }) => `${e.visitorId}:${e.type}`).sort()).toEqual([`${p.person}:form`, `${p.person}:pageview`]);
  });
});

describe("eraseDataSubject", () => {
  it("when a visitor's events wait in a dead letter, then the erasure takes them out, counts them as queued events, and leaves the other visitors' events", async () => {
    const p = people();
    const id = await mixedLetter(p);
    const res = await t.api.request().post("/v1/privacy/erasures").query(admin()).set(as(t.tenant.key)).send({ visitorId: p.seen }).expect(200);
    expect(res.body.counts.queuedEvents).toBe(1);
    const left = await letter(id);
    expect(left?.events).toBe(3);
    expect(visitorsIn(left!.payload)).toEqual([p.other, p.person, p.person].sort());
  });

  it("when a person's form waits in a dead letter, then the erasure by address takes out that visitor's form and page views; a letter left empty goes", async () => {
    const p = people();
    const mixed = await mixedLetter(p);
    const onlyTheirs = await deadLetter([batchOf([{ type: "pageview", visitorId: p.person, url: "https://www.customer.example/d" }] as QueuedBatch["events"])]);
    const res = await t.api.request().post("/v1/privacy/erasures").query(admin()).set(as(t.tenant.key)).send({ subjectEmail: p.email }).expect(200);
    expect(res.body.counts.queuedEvents).toBe(3);
    expect(visitorsIn((await letter(mixed))!.payload)).toEqual([p.other, p.seen].sort());
    expect(await letter(onlyTheirs)).toBeUndefined();
  });

  it("when the dead letter is another account's, then an erasure of the same visitor id leaves it", async () => {
    const p = people();
    const id = await mixedLetter(p);
    const other = t.other;
    await t.api.request().post("/v1/privacy/erasures").query({ email: other.admin.email }).set(as(other.key)).send({ visitorId: p.seen }).expect(200);
    expect((await letter(id))?.events).toBe(4);
  });
});

describe("retention job", () => {
  it("when a dead letter is older than RETENTION_DEAD_LETTER_DAYS, or past its dataset's retention, then the purge deletes it and keeps a recent one", async () => {
    const [, shortKept] = t.tenant.datasets;
    await t.api.request().patch(`/v1/datasets/${shortKept}/privacy`).query(admin()).set(as(t.tenant.key)).send({ retentionDays: 2 }).expect(200);
    const p = people();
    const old = await deadLetter([batchOf([{ type: "pageview", visitorId: p.seen, url: "https://www.customer.example/old" }] as QueuedBatch["events"])], new Date(Date.now() - 11 * DAY));
    const recent = await deadLetter([batchOf([{ type: "pageview", visitorId: p.other, url: "https://www.customer.example/new" }] as QueuedBatch["events"])]);
    const pastDataset = await deadLetter([{ ...batchOf([{ type: "pageview", visitorId: p.person, url: "https://www.customer.example/ds" }] as QueuedBatch["events"], shortKept), at: new Date(Date.now() - 3 * DAY).toISOString() }]);
    const result = await retention(prisma(), { ...DEFAULT_RETENTION, deadLetterDays: 10 }, () => new Date()).purge();
    expect(result.deadLetters).toBeGreaterThanOrEqual(2);
    expect(await letter(old)).toBeUndefined();
    expect(await letter(pastDataset)).toBeUndefined();
    expect(await letter(recent)).toBeDefined();
  });
});
