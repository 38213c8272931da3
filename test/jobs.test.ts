// The durable job queue (server/jobs/queue.ts) on the test database: retries, the dead state,
// RetryAt, leases across "processes" (several queue objects on one database) and dedupe keys.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { GiveUp, type Job, JobQueue, RetryAt } from "../server/jobs/queue.ts";
import { createLogger } from "../server/logging.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { eventually } from "./support/eventually.ts";

let db: TestDatabase;
const logs: string[] = [];
const logger = createLogger("info", (line) => logs.push(line));
const t0 = new Date("2026-11-23T10:00:00Z");
let clock = t0;
const now = () => clock;
const queues: JobQueue[] = [];

function queue(at: () => Date = now): JobQueue {
  const q = new JobQueue(db.prisma, logger, { pollMs: 20, now: at });
  queues.push(q);
  return q;
}

const jobRow = (kind: string) => db.prisma.job.findFirstOrThrow({ where: { kind } });

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await Promise.all(queues.map((q) => q.stop()));
  await db.close();
});
beforeEach(() => {
  clock = t0;
});

describe("JobQueue", () => {
  it("when a handler fails twice, then the third attempt succeeds after the backoff and the job is done", async () => {
    const q = queue();
    const attempts: number[] = [];
    q.register(
      "flaky",
      async (job) => {
        attempts.push(job.attempt);
        if (job.attempt < 3) throw new Error("not yet");
      },
      { maxAttempts: 5, backoffMs: (n) => n * 60_000, jitter: false },
    );
    await q.enqueue(db.prisma, { kind: "flaky", payload: { n: 1 } });
    await q.drain();
    expect(attempts).toEqual([1]);
    const afterFirst = await jobRow("flaky");
    expect(afterFirst.state).toBe("queued");
    expect(afterFirst.runAfter.getTime()).toBe(t0.getTime() + 60_000);
    clock = new Date(t0.getTime() + 60_000);
    await q.drain();
    clock = new Date(t0.getTime() + 60_000 + 120_000);
    await q.drain();
    expect(attempts).toEqual([1, 2, 3]);
    const row = await jobRow("flaky");
    expect(row).toMatchObject({ state: "done", attempts: 3, leaseToken: null });
    expect(row.finishedAt).not.toBeNull();
  });

  it("when every attempt fails, then the job is dead after the last one, with a scrubbed error", async () => {
    const q = queue();
    let runs = 0;
    q.register(
      "doomed",
      async () => {
        runs++;
        throw new Error("mailbox someone@example.com unavailable");
      },
      { maxAttempts: 3, backoffMs: () => 0 },
    );
    await q.enqueue(db.prisma, { kind: "doomed", payload: {} });
    await q.drain();
    expect(runs).toBe(3);
    const row = await jobRow("doomed");
    expect(row).toMatchObject({ state: "dead", attempts: 3 });
    expect(row.lastError).toContain("[email]");
    expect(row.lastError).not.toContain("someone@example.com");
    await q.drain();
    expect(runs).toBe(3);
  });

  it("when a handler gives up, then the job is dead at once", async () => {
    const q = queue();
    let runs = 0;
    q.register(
      "gone2",
      async () => {
        runs++;
        throw new GiveUp("410 Gone");
      },
      { maxAttempts: 5, backoffMs: () => 0 },
    );
    await q.enqueue(db.prisma, { kind: "gone2", payload: {} });
    await q.drain();
    expect(runs).toBe(1);
    expect(await jobRow("gone2")).toMatchObject({ state: "dead", attempts: 1 });
  });

  it("when a handler asks to retry at a time, then the job is not run before it and runs at it", async () => {
    const q = queue();
    const seen: number[] = [];
    const later = new Date(t0.getTime() + 3_600_000);
    q.register(
      "later",
      async (job) => {
        seen.push(job.attempt);
        if (job.attempt === 1) throw new RetryAt(later);
      },
      { maxAttempts: 3, backoffMs: () => 0 },
    );
    await q.enqueue(db.prisma, { kind: "later", payload: {} });
    await q.drain();
    clock = new Date(later.getTime() - 1);
    await q.drain();
    expect(seen).toEqual([1]);
    expect((await jobRow("later")).runAfter.getTime()).toBe(later.getTime());
    clock = later;
    await q.drain();
    expect(seen).toEqual([1, 2]);
    expect(await jobRow("later")).toMatchObject({ state: "done", attempts: 2 });
  });

  it("when a job is scheduled with runAt, then it waits for its time", async () => {
    const q = queue();
    const ran: unknown[] = [];
    q.register("scheduled", async (job) => void ran.push(job.payload), { maxAttempts: 1, backoffMs: () => 0 });
    await q.enqueue(db.prisma, { kind: "scheduled", payload: { x: 1 }, runAt: new Date(t0.getTime() + 1000) });
    await q.drain();
    expect(ran).toEqual([]);
    clock = new Date(t0.getTime() + 1000);
    await q.drain();
    expect(ran).toEqual([{ x: 1 }]);
  });

  it("when a job is enqueued twice with one dedupe key, then it exists and runs once", async () => {
    const q = queue();
    let runs = 0;
    q.register("deduped", async () => void runs++, { maxAttempts: 1, backoffMs: () => 0 });
    await q.enqueue(db.prisma, { kind: "deduped", payload: {}, dedupeKey: "k:1" });
    await db.prisma.$transaction((tx) => q.enqueue(tx, { kind: "deduped", payload: {}, dedupeKey: "k:1" }));
    await q.drain();
    await q.enqueue(db.prisma, { kind: "deduped", payload: {}, dedupeKey: "k:1" });
    await q.drain();
    expect(runs).toBe(1);
    expect(await db.prisma.job.count({ where: { kind: "deduped" } })).toBe(1);
  });

  it("when the enqueuing transaction rolls back, then no job exists", async () => {
    const q = queue();
    await db.prisma
      .$transaction(async (tx) => {
        await q.enqueue(tx, { kind: "rolled-back", payload: {} });
        throw new Error("abort");
      })
      .catch(() => {});
    expect(await db.prisma.job.count({ where: { kind: "rolled-back" } })).toBe(0);
  });

  it("when two queues on one database run many jobs, then each job runs exactly once", async () => {
    const runs = new Map<string, number>();
    const handler = async (job: Job) => {
      const n = (job.payload as { n: number }).n;
      // not a wait for an outcome: handlers of 0, 1 or 2 ms, so that the two queues' claims interleave
      await new Promise((resolve) => setTimeout(resolve, n % 3));
      runs.set(String(n), (runs.get(String(n)) ?? 0) + 1);
    };
    const realClock = () => new Date();
    const [a, b] = [queue(realClock), queue(realClock)];
    for (const q of [a, b]) q.register("parallel", handler, { maxAttempts: 3, backoffMs: () => 0, concurrency: 4 });
    const total = 40;
    for (let n = 0; n < total; n++) await a.enqueue(db.prisma, { kind: "parallel", payload: { n } });
    a.start();
    b.start();
    await eventually(async () => expect(await db.prisma.job.count({ where: { kind: "parallel", state: "done" } })).toBe(total), { intervalMs: 20 });
    await Promise.all([a.stop(), b.stop()]);
    expect(runs.size).toBe(total);
    expect([...runs.values()].every((count) => count === 1)).toBe(true);
    expect(await db.prisma.job.count({ where: { kind: "parallel", attempts: { not: 1 } } })).toBe(0);
  });

  it("when a worker dies holding a job, then another claims it once the lease ran out, and the dead worker's late write changes nothing", async () => {
    let release = () => {};
    const hung = new Promise<void>((resolve) => (release = resolve));
    const seen: string[] = [];
    const first = queue();
    first.register(
      "leased",
      async (job) => {
        seen.push(`first:${job.attempt}`);
        await hung;
      },
      { maxAttempts: 3, backoffMs: () => 0, leaseMs: 60_000 },
    );
    let secondClock = t0;
    const second = queue(() => secondClock);
    second.register("leased", async (job) => void seen.push(`second:${job.attempt}`), { maxAttempts: 3, backoffMs: () => 0, leaseMs: 60_000 });
    await first.enqueue(db.prisma, { kind: "leased", payload: {} });
    const firstRun = first.drain();
    await eventually(() => expect(seen).toHaveLength(1), { intervalMs: 20 });
    // the lease holds: the second queue finds nothing due
    secondClock = new Date(t0.getTime() + 59_000);
    await second.drain();
    expect(seen).toEqual(["first:1"]);
    // the first "process" is gone (its lease ran out): the job is claimed again
    secondClock = new Date(t0.getTime() + 60_001);
    await second.drain();
    expect(seen).toEqual(["first:1", "second:2"]);
    expect(await jobRow("leased")).toMatchObject({ state: "done", attempts: 2 });
    const finishedAt = (await jobRow("leased")).finishedAt;
    release();
    await firstRun;
    expect(await jobRow("leased")).toMatchObject({ state: "done", attempts: 2, finishedAt });
  });

  it("when a job was interrupted on its last attempt, then the next claim marks it dead without running it", async () => {
    const q = queue();
    let runs = 0;
    const deadPayloads: unknown[] = [];
    q.register("interrupted", async () => void runs++, { maxAttempts: 2, backoffMs: () => 0, onDead: async ({ payload }) => void deadPayloads.push(payload) });
    await q.enqueue(db.prisma, { kind: "interrupted", payload: { deliveryId: "msg_1" } });
    await db.prisma.job.updateMany({
      where: { kind: "interrupted" },
      data: { state: "running", attempts: 2, leaseToken: "dead-process", leaseUntil: new Date(t0.getTime() - 1) },
    });
    await q.drain();
    expect(runs).toBe(0);
    expect(await jobRow("interrupted")).toMatchObject({ state: "dead", attempts: 3, lastError: "interrupted too often" });
    expect(deadPayloads).toEqual([{ deliveryId: "msg_1" }]); // the kind settles its own state (a webhook delivery)
  });

  it("when many jobs are queued in one statement, then each exists once per dedupe key and the count says how many were new", async () => {
    const q = queue();
    const batch = [1, 2, 3].map((n) => ({ kind: "many", payload: { n }, dedupeKey: `many:${n}` }));
    expect(await q.enqueueMany(db.prisma, batch)).toBe(3);
    expect(await q.enqueueMany(db.prisma, [...batch, { kind: "many", payload: { n: 4 }, dedupeKey: "many:4" }])).toBe(1);
    expect(await q.enqueueMany(db.prisma, [])).toBe(0);
    expect(await db.prisma.job.count({ where: { kind: "many" } })).toBe(4);
    expect(await q.stateOf(db.prisma, "many:2")).toBe("queued");
    expect(await q.stateOf(db.prisma, "many:none")).toBeUndefined();
  });

  it("when a handler asks whether its attempt still runs, then yes while it holds it, and no once another attempt took the job over", async () => {
    const q = queue();
    const answers: boolean[] = [];
    q.register(
      "holding",
      async (job) => {
        answers.push(await db.prisma.$transaction((tx) => q.holdsAttempt(tx, job.id, job.attempt)));
        answers.push(await db.prisma.$transaction((tx) => q.holdsAttempt(tx, job.id, job.attempt - 1)));
      },
      { maxAttempts: 3, backoffMs: () => 0 },
    );
    await q.enqueue(db.prisma, { kind: "holding", payload: null, dedupeKey: "holding:1" });
    await q.drain();
    expect(answers).toEqual([true, false]);
    expect(await q.stateOf(db.prisma, "holding:1")).toBe("done");
    const { id } = await jobRow("holding");
    expect(await db.prisma.$transaction((tx) => q.holdsAttempt(tx, id, 1))).toBe(false); // done: no attempt runs
  });
});
