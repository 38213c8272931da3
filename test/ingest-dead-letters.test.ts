// A batch the database refuses, on both ingest logs (the queue table; JetStream on the real NATS
// server of test/support/jetstream.ts): the batches taken with it are written exactly once, it is
// tried INGEST_MAX_ATTEMPTS times and then set aside whole into the dead-letter table, the writer
// moves on, /metrics shows it and the lag returns to 0; a transient fault is waited out, never
// set aside; the operator commands list, replay and drop dead letters.
import { randomBytes } from "node:crypto";
import { jetstream } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { faultText, isTransientFault, writeFault } from "../server/db/errors.ts";
import { NotFound, Conflict } from "../server/domain/errors.ts";
import { createLogger } from "../server/logging.ts";
import { metricsRegistry } from "../server/metrics.ts";
import { deadLetterCommand } from "../server/tracking/log/dead-letter-command.ts";
import type { ReplayedLetters } from "../server/tracking/log/dead-letters.ts";
import { NOT_JSON, type QueuedBatch } from "../server/tracking/collect/events.ts";
import { type IngestLog, openIngestLog, tableLog } from "../server/tracking/log/ingest-log.ts";
import type { WriterOptions } from "../server/tracking/log/writer.ts";
import { eventually } from "./support/eventually.ts";
import { deleteStream, logConfigOf, messagesLeft, NATS_URL, reachable, uniqueLogEnv } from "./support/jetstream.ts";
import { ADDRESSES, ONLY_EVIDENCE, startTracking, type TrackingSuite, startWiredWriter, wiredWriter } from "./support/tracking.ts";
import * as datasets from "../server/services/datasets.ts";

const natsAvailable = await reachable();
if (!natsAvailable) console.log(`JetStream dead-letter tests skipped: no NATS server at ${NATS_URL} (start one: nats-server -a 127.0.0.1 -p 4222 -js)`);

const MAX_ATTEMPTS = 3;

/** The value of a counter or gauge (with `labels`) as /metrics shows it now. */
async function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
  const { values } = await metricsRegistry.getSingleMetric(name)!.get();
  const found = values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return found?.value ?? 0;
}

/** What a test's writer logged, as parsed lines. */
function capturedLogger() {
  const lines: { level: string; msg: string; [field: string]: unknown }[] = [];
  const raw: string[] = [];
  const logger = createLogger("info", (line) => {
    raw.push(line);
    lines.push(JSON.parse(line));
  });
  return { logger, lines, raw };
}

let t: TrackingSuite;
beforeAll(async () => {
  t = await startTracking();
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const prisma = () => t.api.db.prisma;

/** A run's own marker in every URL, so tests on one database count only their own visits. */
const runOf = () => randomBytes(4).toString("hex");

/** The batch of request `n` of a run: two page views with URLs that say which request they came from. */
function batchOf(run: string, n: number, overrides: { datasetId?: string; leadId?: string | null } = {}): QueuedBatch {
  return {
    accountId: t.tenant.accountId,
    datasetId: overrides.datasetId ?? t.tenant.datasets[0],
    at: new Date().toISOString(),
    enrich: false,
    network: {
      leadId: overrides.leadId === undefined ? "org_deadlettertest" : (overrides.leadId as string),
      organizationName: "Dead Letter Test Inc",
      organizationDomain: null,
      asn: 714,
      networkType: "business",
      country: "US",
      city: null,
      ip: ADDRESSES.business,
    },
    events: [0, 1].map((i) => ({ type: "pageview" as const, visitorId: `visitor_${run}_${n}`, url: `https://www.customer.example/${run}/${n}/${i}` })),
  };
}

/** Visits written per request of `run`. */
async function visitsOf(run: string): Promise<Map<number, number>> {
  const rows = await prisma().$queryRaw<{ url: string }[]>`SELECT url FROM "Visit" WHERE url LIKE ${`%/${run}/%`}`;
  const perRequest = new Map<number, number>();
  for (const { url } of rows) {
    const n = Number(url.split("/").at(-2));
    perRequest.set(n, (perRequest.get(n) ?? 0) + 1);
  }
  return perRequest;
}

/** Every request in `written` has its 2 visits exactly once; no other request of the run has any. */
async function expectWrittenOnce(run: string, written: number[]): Promise<void> {
  const found = await visitsOf(run);
  expect(Object.fromEntries(found)).toEqual(Object.fromEntries(written.map((n) => [n, 2])));
}

interface DeadLetterRow {
  id: string;
  log: string;
  messageId: string | null;
  datasetId: string | null;
  attempts: number;
  events: number;
  error: string;
  payload: unknown;
}

/** The dead letters whose payload mentions `run`. */
const deadLettersOf = (run: string) =>
  prisma().$queryRaw<DeadLetterRow[]>`
    SELECT id::text AS id, "log"::text AS "log", "messageId", "datasetId", attempts, events, error, payload
    FROM "IngestDeadLetter" WHERE payload::text LIKE ${`%${run}%`} ORDER BY id`;

/** A trigger that refuses visits whose URL contains `marker` as a check violation would (a rule an operator can lift). */
async function refuseVisitsMarked(marker: string): Promise<() => Promise<void>> {
  const name = `refuse_${marker}`;
  await prisma().$executeRawUnsafe(`
    CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.url LIKE '%${marker}%' THEN RAISE EXCEPTION 'refused by a test rule' USING ERRCODE = '23514'; END IF;
      RETURN NEW;
    END $$`);
  await prisma().$executeRawUnsafe(`CREATE TRIGGER ${name} BEFORE INSERT ON "Visit" FOR EACH ROW EXECUTE FUNCTION ${name}()`);
  return async () => {
    await prisma().$executeRawUnsafe(`DROP TRIGGER ${name} ON "Visit"`);
    await prisma().$executeRawUnsafe(`DROP FUNCTION ${name}()`);
  };
}

/**
 * A transient fault of the database: the writer's visitor upserts fail with "lock not available"
 * (55P03) `times` times, then pass (a sequence counts: it is not rolled back with the transaction).
 */
async function lockTimeouts(times: number): Promise<() => Promise<void>> {
  const name = `lock_timeouts_${runOf()}`;
  await prisma().$executeRawUnsafe(`CREATE SEQUENCE ${name}_seq`);
  await prisma().$executeRawUnsafe(`
    CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF nextval('${name}_seq') <= ${times} THEN RAISE EXCEPTION 'canceling statement due to lock timeout' USING ERRCODE = '55P03'; END IF;
      RETURN NULL;
    END $$`);
  await prisma().$executeRawUnsafe(`CREATE TRIGGER ${name} BEFORE INSERT ON "Visitor" FOR EACH STATEMENT EXECUTE FUNCTION ${name}()`);
  return async () => {
    await prisma().$executeRawUnsafe(`DROP TRIGGER ${name} ON "Visitor"`);
    await prisma().$executeRawUnsafe(`DROP FUNCTION ${name}()`);
    await prisma().$executeRawUnsafe(`DROP SEQUENCE ${name}_seq`);
  };
}

const queueLength = async () => Number((await prisma().$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM "IngestQueue"`)[0]!.n);

describe("writeFault", () => {
  it("when the database refuses data (not-null, foreign key, a bad date), then the fault is permanent; when it times out, deadlocks or is busy, then transient", async () => {
    const refusals = await Promise.all([
      prisma().$executeRaw`INSERT INTO "Lead" ("accountId", "datasetId", "id", "organizationName") VALUES ('acc_x', 'ds_x', NULL, 'x')`.catch((e: unknown) => e),
      prisma().$executeRaw`INSERT INTO "Lead" ("accountId", "datasetId", "id", "organizationName", "firstVisitAt", "lastVisitAt", "visitCount") VALUES ('acc_x', 'ds_x', 'l', 'x', now(), now(), 1)`.catch((e: unknown) => e),
      prisma().$executeRaw`SELECT ${"2026-13-45 jane@example.com 17.253.144.10"}::timestamptz`.catch((e: unknown) => e),
    ]);
    expect(refusals.map(writeFault)).toEqual(["permanent", "permanent", "permanent"]);
    expect(refusals.map(isTransientFault)).toEqual([false, false, false]);
    expect(faultText(refusals[0])).toMatch(/^SQLSTATE 23502: null value in column "id" of relation "Lead"/);
    // the value a data exception quotes is kept out of what is stored and logged
    expect(faultText(refusals[2])).not.toMatch(/jane|example\.com|17\.253/);

    const raised = (sqlState: string) => prisma().$executeRawUnsafe(`DO $$ BEGIN RAISE EXCEPTION 'a fault' USING ERRCODE = '${sqlState}'; END $$`).catch((e: unknown) => e);
    const waits = await Promise.all(["57014", "55P03", "40001", "40P01", "53300"].map(raised));
    for (const error of [...waits, new Error("Transaction API error: Unable to start a transaction in the given time.")]) {
      expect(writeFault(error)).toBe("transient");
      expect(isTransientFault(error)).toBe(true);
    }
  });
});

describe("the queue table's dead letters", () => {
  const log = () => tableLog(prisma());
  const writerOf = (logger = createLogger("silent"), options: WriterOptions = {}) =>
    wiredWriter(t.api, { ...ONLY_EVIDENCE, log: log(), maxAttempts: MAX_ATTEMPTS, ...options }, logger);

  it("when a batch with a null lead id is queued among good ones, then the good ones are written once, it is set aside after the bounded tries, the writer moves on, and /metrics shows it", async () => {
    const run = runOf();
    const [permanentBefore, deadEventsBefore] = [await metric("ingest_writer_failed_batches_total", { fault: "permanent" }), await metric("ingest_dead_lettered_events_total")];
    await log().append([batchOf(run, 1), batchOf(run, 2), batchOf(run, 3, { leadId: null }), batchOf(run, 4), batchOf(run, 5)]);
    const { logger, lines, raw } = capturedLogger();
    const writer = writerOf(logger);

    const written = await writer.drain();
    expect(written.reduce((n, r) => n + r.events, 0)).toBe(8);
    await expectWrittenOnce(run, [1, 2, 4, 5]);
    const [letter, ...more] = await deadLettersOf(run);
    expect(more).toEqual([]);
    expect(letter).toMatchObject({ log: "postgres", messageId: null, datasetId: t.tenant.datasets[0], attempts: MAX_ATTEMPTS, events: 2 });
    expect(letter!.error).toMatch(/^SQLSTATE 23502: null value in column "id" of relation "Lead"/);
    expect(letter!.payload).toMatchObject({ events: [{ url: `https://www.customer.example/${run}/3/0` }, { url: `https://www.customer.example/${run}/3/1` }] });
    expect(await queueLength()).toBe(0);

    // every try of it failed (the first with the batches taken with it, then alone)
    expect(await metric("ingest_writer_failed_batches_total", { fault: "permanent" })).toBeGreaterThanOrEqual(permanentBefore + MAX_ATTEMPTS);
    expect(await metric("ingest_dead_lettered_events_total")).toBe(deadEventsBefore + 2);
    expect(await metric("ingest_dead_letters")).toBeGreaterThanOrEqual(1);
    expect(await metric("ingest_writer_lag_seconds")).toBe(0);
    // one error line an operator acts on, naming the dead letter; no address in any line
    expect(lines.filter((l) => l.level === "error")).toEqual([expect.objectContaining({ id: letter!.id, events: 2, attempts: MAX_ATTEMPTS })]);
    expect(raw.join("\n")).not.toContain(ADDRESSES.business);

    // the writer moves on: what comes next is written
    await log().append([batchOf(run, 6)]);
    await writer.drain();
    await expectWrittenOnce(run, [1, 2, 4, 5, 6]);
    await writer.stop();
  });

  it("when a queued row cannot be read as a batch, then it is set aside at once and the rows taken with it are written", async () => {
    const run = runOf();
    await log().append([batchOf(run, 1)]);
    await prisma().$executeRaw`
      INSERT INTO "IngestQueue" ("accountId", "datasetId", "receivedAt", "batch")
      VALUES (${t.tenant.accountId}, ${t.tenant.datasets[0]}, now(), ${JSON.stringify({ run, events: "not a list" })}::jsonb)`;
    await log().append([batchOf(run, 2)]);
    const writer = writerOf();
    await writer.drain();
    await expectWrittenOnce(run, [1, 2]);
    expect(await deadLettersOf(run)).toEqual([
      expect.objectContaining({ log: "postgres", attempts: 1, events: 0, error: expect.stringMatching(/^not a batch/) }),
    ]);
    expect(await queueLength()).toBe(0);
    await writer.stop();
  });

  it("when a batch's earlier tries were counted by a writer that stopped, then two new writers go on counting from there and set it aside once", async () => {
    const run = runOf();
    await log().append([batchOf(run, 1, { leadId: null })]);
    await prisma().$executeRaw`UPDATE "IngestQueue" SET attempts = ${MAX_ATTEMPTS - 1} WHERE batch::text LIKE ${`%${run}%`}`;
    await log().append(Array.from({ length: 20 }, (_, i) => batchOf(run, i + 2)));
    const writers = [writerOf(), writerOf()];
    await Promise.all(writers.map((w) => w.drain()));
    await expectWrittenOnce(run, Array.from({ length: 20 }, (_, i) => i + 2));
    const letters = await deadLettersOf(run);
    expect(letters).toHaveLength(1);
    expect(letters[0]!.attempts).toBeGreaterThanOrEqual(MAX_ATTEMPTS);
    expect(await queueLength()).toBe(0);
    for (const w of writers) await w.stop();
  });

  it("when the database fails transiently (lock timeouts) more often than the bounded tries, then nothing is set aside, the writer warns once for the outage and writes everything once it passes", async () => {
    const run = runOf();
    const transientBefore = await metric("ingest_writer_failed_batches_total", { fault: "transient" });
    const lifted = await lockTimeouts(MAX_ATTEMPTS + 3);
    const { logger, lines } = capturedLogger();
    // polling as in a service: its own timer, backoff and log lines
    const writer = startWiredWriter(t.api, { ...ONLY_EVIDENCE, log: log(), maxAttempts: MAX_ATTEMPTS, pollMs: 20 }, logger);
    try {
      await log().append([batchOf(run, 1), batchOf(run, 2)]);
      writer.wake();
      await eventually(() => expectWrittenOnce(run, [1, 2]), { timeoutMs: 60_000, intervalMs: 100 });
      await eventually(() => expect(lines.filter((l) => l.msg === "ingest writer writes again")).toHaveLength(1));
    } finally {
      await writer.stop();
      await lifted();
    }
    expect(await deadLettersOf(run)).toEqual([]);
    expect(await metric("ingest_writer_failed_batches_total", { fault: "transient" })).toBeGreaterThanOrEqual(transientBefore + MAX_ATTEMPTS + 3);
    const levels = lines.filter((l) => l.level !== "info" || l.msg === "ingest writer writes again").map((l) => `${l.level}: ${l.msg}`);
    expect(levels).toEqual([
      "warn: ingest writer waits: the database or the ingest log is unavailable; the events stay queued and are retried",
      "info: ingest writer writes again",
    ]);
  });
});

describe("dead-letters list, replay and drop (the operator commands)", () => {
  const config = { ingestLog: undefined, logLevel: "silent" as const };

  it("when a dead letter's cause is lifted, then replay puts it back into the queue and removes it, and the writer writes it once; drop deletes one for good", async () => {
    const run = runOf();
    const marker = `rule${run}`;
    const lift = await refuseVisitsMarked(marker);
    const log = tableLog(prisma());
    const refused = { ...batchOf(run, 2), events: [{ type: "pageview" as const, visitorId: `visitor_${run}`, url: `https://www.customer.example/${run}/2/${marker}` }] };
    await log.append([batchOf(run, 1), refused, batchOf(run, 3, { leadId: null })]);
    const writer = wiredWriter(t.api, { ...ONLY_EVIDENCE, log, maxAttempts: MAX_ATTEMPTS }, createLogger("silent"));
    await writer.drain();
    await expectWrittenOnce(run, [1]);
    const [byRule, nullLead] = await deadLettersOf(run);
    expect(byRule!.error).toMatch(/^SQLSTATE 23514: refused by a test rule/);

    const listed = await deadLetterCommand(prisma(), config, "list", {});
    expect(listed.text).toContain(`${byRule!.id}  postgres  ${t.tenant.datasets[0]}  1 events  ${MAX_ATTEMPTS} tries`);
    expect(listed.text).not.toContain(ADDRESSES.business);
    expect(JSON.stringify(listed.data)).not.toContain(ADDRESSES.business);

    await lift();
    const replayed = await deadLetterCommand(prisma(), config, "replay", { id: byRule!.id });
    expect(replayed.data).toMatchObject({ batches: 1, events: 1, log: "postgres" });
    expect((await deadLettersOf(run)).map((l) => l.id)).toEqual([nullLead!.id]);
    await writer.drain();
    expect(Object.fromEntries(await visitsOf(run))).toEqual({ 1: 2, 2: 1 });
    await expect(deadLetterCommand(prisma(), config, "replay", { id: byRule!.id })).rejects.toThrow(NotFound);

    expect((await deadLetterCommand(prisma(), config, "drop", { id: nullLead!.id })).text).toBe(`dead letter ${nullLead!.id} dropped`);
    expect(await deadLettersOf(run)).toEqual([]);
    await expect(deadLetterCommand(prisma(), config, "drop", { id: nullLead!.id })).rejects.toThrow(NotFound);
    await writer.stop();
  });

  it("when a dead letter's dataset is gone or its payload is not a batch, then replay refuses it and leaves it for drop", async () => {
    const run = runOf();
    const [gone, unreadable] = await prisma().$queryRaw<{ id: string }[]>`
      INSERT INTO "IngestDeadLetter" ("log", "accountId", "datasetId", "attempts", "error", "payload", "events")
      VALUES ('jetstream', ${t.tenant.accountId}, 'ds_gone', 3, 'SQLSTATE 23503', ${JSON.stringify([{ ...batchOf(run, 1), datasetId: "ds_gone" }])}::jsonb, 2),
             ('jetstream', NULL, NULL, 1, 'not a batch', ${JSON.stringify(`not json ${run}`)}::jsonb, 0)
      RETURNING id::text AS id`;
    await expect(deadLetterCommand(prisma(), config, "replay", { id: gone!.id })).rejects.toThrow(new Conflict(`dead letter ${gone!.id} cannot be replayed: dataset ds_gone no longer exists; drop it`));
    await expect(deadLetterCommand(prisma(), config, "replay", { id: unreadable!.id })).rejects.toThrow(Conflict);
    expect(await deadLettersOf(run)).toHaveLength(2);
    expect(await queueLength()).toBe(0);
    for (const { id } of [gone!, unreadable!]) await deadLetterCommand(prisma(), config, "drop", { id });
  });
});

describe("dead-letters list and replay --all (oldest first, by error code)", () => {
  const config = { ingestLog: undefined, logLevel: "silent" as const };

  /** Moves the dead letters' id sequence to just below a power of ten, so that the next ids cross it (99 -> 100: text order would put 100 first). */
  async function idsAboutToGainADigit(): Promise<void> {
    const [sequence] = await prisma().$queryRaw<{ last: bigint }[]>`SELECT last_value AS last FROM "IngestDeadLetter_id_seq"`;
    const nextPower = 10n ** BigInt(String(sequence!.last + 4n).length);
    await prisma().$executeRaw`SELECT setval('"IngestDeadLetter_id_seq"', ${nextPower - 4n})`;
  }

  /** `count` dead letters of the error code `code` (each a good batch of request n of `run`), in the order inserted; their ids. */
  async function lettersOfCode(run: string, code: string, count: number): Promise<string[]> {
    const ids: string[] = [];
    for (let n = 1; n <= count; n++) {
      const [row] = await prisma().$queryRaw<{ id: string }[]>`
        INSERT INTO "IngestDeadLetter" ("log", "accountId", "datasetId", "attempts", "error", "payload", "events")
        VALUES ('postgres', ${t.tenant.accountId}, ${t.tenant.datasets[0]}, 3, ${`SQLSTATE ${code}: a test rule`}, ${JSON.stringify(batchOf(run, n))}::jsonb, 2)
        RETURNING id::text AS id`;
      ids.push(row!.id);
    }
    return ids;
  }

  /** A test's own error code: five capitals and digits no other test uses. */
  const codeOf = (run: string) => `Z${run.slice(0, 4).toUpperCase()}`;

  it("when the ids pass a power of ten, then list gives the letters oldest first by number and --limit N the N oldest", async () => {
    const run = runOf();
    await idsAboutToGainADigit();
    const ids = await lettersOfCode(run, codeOf(run), 6);
    const listed = await deadLetterCommand(prisma(), config, "list", { code: codeOf(run) });
    expect((listed.data as { id: string }[]).map((l) => l.id)).toEqual(ids);
    expect(listed.text.split("\n").map((line) => line.split("  ")[0])).toEqual(ids);
    const oldest = await deadLetterCommand(prisma(), config, "list", { code: codeOf(run), limit: 2 });
    expect((oldest.data as { id: string }[]).map((l) => l.id)).toEqual(ids.slice(0, 2));
    for (const id of ids) await deadLetterCommand(prisma(), config, "drop", { id });
  });

  it("when replay --all --code runs, then every letter of that code is put back oldest first and written once, and the others stay", async () => {
    const run = runOf();
    const [code, other] = [codeOf(run), `Y${run.slice(4).toUpperCase()}`];
    const ids = await lettersOfCode(run, code, 12);
    const [kept] = await lettersOfCode(`${run}x`, other, 1);
    const replayed = await deadLetterCommand(prisma(), config, "replay", { code });
    expect(replayed.data).toEqual({ replayed: ids.map((id) => ({ id, batches: 1, events: 2 })), left: [], log: "postgres" });
    expect(replayed.incomplete).toBe(false);
    expect(replayed.text).toBe(`12 dead letters (24 events) put back into the ingest log (postgres) and removed from the dead-letter table: ${ids.join(", ")}`);
    const writer = wiredWriter(t.api, { ...ONLY_EVIDENCE, log: tableLog(prisma()), maxAttempts: MAX_ATTEMPTS }, createLogger("silent"));
    await writer.drain();
    await writer.stop();
    await expectWrittenOnce(run, Array.from({ length: 12 }, (_, i) => i + 1));
    expect((await deadLetterCommand(prisma(), config, "list", { code: other })).data).toEqual([expect.objectContaining({ id: kept })]);
    await deadLetterCommand(prisma(), config, "drop", { id: kept! });
  });

  it("when replay --all meets a letter that is not JSON, then it says why as list does, leaves it and replays the rest", async () => {
    const run = runOf();
    const [good] = await lettersOfCode(run, codeOf(run), 1);
    const [unreadable] = await prisma().$queryRaw<{ id: string }[]>`
      INSERT INTO "IngestDeadLetter" ("log", "accountId", "datasetId", "attempts", "error", "payload", "events")
      VALUES ('jetstream', NULL, NULL, 1, ${NOT_JSON}, ${JSON.stringify(`{"not": "json" ${run}`)}::jsonb, 0)
      RETURNING id::text AS id`;
    const listedLine = (await deadLetterCommand(prisma(), config, "list", { limit: 1_000 })).text.split("\n").find((line) => line.startsWith(`${unreadable!.id}  `));
    expect(listedLine).toMatch(new RegExp(`  ${NOT_JSON}$`));
    const reason = `dead letter ${unreadable!.id} cannot be replayed (${NOT_JSON}): drop it`;
    await expect(deadLetterCommand(prisma(), config, "replay", { id: unreadable!.id })).rejects.toThrow(new Conflict(reason));

    const all = await deadLetterCommand(prisma(), config, "replay", { limit: 1_000 });
    const { replayed, left } = all.data as ReplayedLetters;
    expect(replayed.map((r) => r.id)).toContain(good);
    expect(left).toContainEqual({ id: unreadable!.id, reason });
    expect(all.incomplete).toBe(true);
    expect(all.text.split("\n")).toContain(reason);
    const writer = wiredWriter(t.api, { ...ONLY_EVIDENCE, log: tableLog(prisma()), maxAttempts: MAX_ATTEMPTS }, createLogger("silent"));
    await writer.drain();
    await writer.stop();
    await expectWrittenOnce(run, [1]);
    await deadLetterCommand(prisma(), config, "drop", { id: unreadable!.id });
  });
});

describe.skipIf(!natsAvailable)("JetStream's dead letters", () => {
  const logEnv = uniqueLogEnv(NATS_URL, 2);
  const logs: IngestLog[] = [];
  const open = async () => {
    const log = await openIngestLog(prisma(), logConfigOf(logEnv), createLogger("silent"));
    logs.push(log);
    return log;
  };
  afterAll(async () => {
    for (const log of logs) await log.close();
    await deleteStream(logEnv);
  });

  /** Drains until the stream holds nothing (a batch sent back waits a second before it comes again). */
  async function drainAll(writer: ReturnType<typeof wiredWriter>): Promise<void> {
    await eventually(
      async () => {
        await writer.drain();
        expect(await messagesLeft(logEnv)).toBe(0);
      },
      { timeoutMs: 90_000, intervalMs: 200, message: "the stream emptied" },
    );
  }

  /** Publishes `payload` as it is, straight to the stream (not through the collector). */
  async function publishRaw(payload: string): Promise<void> {
    const nc = await connect({ servers: NATS_URL });
    try {
      await jetstream(nc).publish(logEnv.INGEST_LOG_SUBJECT!, payload);
    } finally {
      await nc.close();
    }
  }

  it("when poison messages (a dataset deleted after acceptance, a null lead id, one grouped with a good batch, one not JSON) are among good ones, then the good ones are written once, each poison one is set aside and terminated, and the lag returns to 0", async () => {
    const run = runOf();
    const collectorLog = await open();
    const doomed = await datasets.create(t.api.services, t.tenant.accountId, t.tenant.admin.email, { name: `Doomed ${run}` });
    const before = {
      redeliveries: await metric("ingest_log_redeliveries_total"),
      deadEvents: await metric("ingest_dead_lettered_events_total"),
      permanent: await metric("ingest_writer_failed_batches_total", { fault: "permanent" }),
    };
    await collectorLog.append([batchOf(run, 1)]);
    await collectorLog.append([batchOf(run, 2, { datasetId: doomed })]);
    await collectorLog.append([batchOf(run, 3)]);
    await collectorLog.append([batchOf(run, 4, { leadId: null })]);
    await collectorLog.append([batchOf(run, 5), batchOf(run, 6, { leadId: null })]); // one message of two requests
    await publishRaw(`{"not": "a batch list" ${run}`);
    await collectorLog.append([batchOf(run, 7)]);
    // the dataset goes while its accepted batch waits in the stream
    await prisma().$executeRaw`DELETE FROM "Dataset" WHERE id = ${doomed}`;

    const writer = wiredWriter(t.api, { ...ONLY_EVIDENCE, log: await open(), maxAttempts: MAX_ATTEMPTS }, createLogger("silent"));
    await drainAll(writer);
    await expectWrittenOnce(run, [1, 3, 5, 7]);
    const letters = await deadLettersOf(run);
    const requestOf = (letter: DeadLetterRow) => (Array.isArray(letter.payload) ? (letter.payload[0] as { events: { url: string }[] }).events[0]!.url.split("/").at(-2) : "unreadable");
    expect(Object.fromEntries(letters.map((l) => [requestOf(l), { log: l.log, attempts: l.attempts, events: l.events, error: l.error.slice(0, 14) }]))).toEqual({
      2: { log: "jetstream", attempts: MAX_ATTEMPTS, events: 2, error: "SQLSTATE 23503" },
      4: { log: "jetstream", attempts: MAX_ATTEMPTS, events: 2, error: "SQLSTATE 23502" },
      6: { log: "jetstream", attempts: MAX_ATTEMPTS, events: 2, error: "SQLSTATE 23502" },
      unreadable: { log: "jetstream", attempts: 1, events: 0, error: "not a batch: t" },
    });
    // the request split from its group went on as a message of its own
    expect(letters.find((l) => requestOf(l) === "6")!.messageId).toMatch(/\/1$/);
    // set aside, their ids count as written: a redelivery (a termination lost) writes nothing
    const ids = letters.map((l) => l.messageId!);
    const recorded = await prisma().$queryRaw<{ id: string }[]>`SELECT id FROM "IngestedBatch" WHERE id IN (SELECT jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))`;
    expect(recorded).toHaveLength(4);

    expect(await collectorLog.oldestUnwritten()).toBeUndefined();
    expect(await metric("ingest_writer_lag_seconds")).toBe(0);
    // each poison message was seen redelivered at least at its last try (a delivery to a fetch that
    // expired at that moment is never seen by the writer: the next one comes after the ack wait)
    expect(await metric("ingest_log_redeliveries_total")).toBeGreaterThanOrEqual(before.redeliveries + 3);
    expect(await metric("ingest_dead_lettered_events_total")).toBe(before.deadEvents + 6);
    expect(await metric("ingest_writer_failed_batches_total", { fault: "permanent" })).toBeGreaterThan(before.permanent);

    // the writer moves on
    await collectorLog.append([batchOf(run, 8)]);
    await drainAll(writer);
    await expectWrittenOnce(run, [1, 3, 5, 7, 8]);
    await writer.stop();
  }, 180_000);

  it("when the database fails transiently more often than the bounded tries, then no message is set aside and each is written once when it passes", async () => {
    const run = runOf();
    const collectorLog = await open();
    for (const n of [1, 2, 3]) await collectorLog.append([batchOf(run, n)]);
    const lifted = await lockTimeouts(MAX_ATTEMPTS + 3);
    const writer = wiredWriter(t.api, { ...ONLY_EVIDENCE, log: await open(), maxAttempts: MAX_ATTEMPTS }, createLogger("silent"));
    try {
      await eventually(
        async () => {
          await writer.drain().catch(() => undefined); // the fault, thrown to the caller; the messages go back
          expect(await messagesLeft(logEnv)).toBe(0);
        },
        { timeoutMs: 90_000, intervalMs: 200 },
      );
    } finally {
      await lifted();
      await writer.stop();
    }
    await expectWrittenOnce(run, [1, 2, 3]);
    expect(await deadLettersOf(run)).toEqual([]);
  }, 180_000);

  it("when a dead letter is replayed, then it is published again and written once, and leaves the dead-letter table", async () => {
    const run = runOf();
    const marker = `rule${run}`;
    const lift = await refuseVisitsMarked(marker);
    const collectorLog = await open();
    await collectorLog.append([{ ...batchOf(run, 1), events: [{ type: "pageview", visitorId: `visitor_${run}`, url: `https://www.customer.example/${run}/1/${marker}` }] }]);
    const writer = wiredWriter(t.api, { ...ONLY_EVIDENCE, log: await open(), maxAttempts: MAX_ATTEMPTS }, createLogger("silent"));
    await drainAll(writer);
    const [letter] = await deadLettersOf(run);
    expect(letter).toMatchObject({ log: "jetstream", attempts: MAX_ATTEMPTS });

    await lift();
    const config = { ingestLog: logConfigOf(logEnv), logLevel: "silent" as const };
    expect((await deadLetterCommand(prisma(), config, "replay", { id: letter!.id })).data).toMatchObject({ events: 1, log: "jetstream" });
    expect(await deadLettersOf(run)).toEqual([]);
    await drainAll(writer);
    expect(Object.fromEntries(await visitsOf(run))).toEqual({ 1: 1 });
    await writer.stop();
  }, 180_000);
});
