// Why server/jobs/queue.ts is not pg-boss (issue 37 item 5; docs/jobs-mail-webhooks.md names this
// file): pg-boss 10 (the last release for Node 20) runs on PGlite and PostgreSQL here and enqueues
// inside a Prisma transaction, but it has no lease a live worker renews. A job whose handler
// outlives `expireIn` is failed and run again while the first run goes on, and the first run's
// late `complete` settles the attempt another worker holds. JobQueue renews its lease while
// the handler runs and makes every write conditional on it (its test below, and jobs.test.ts).
// The pg-boss tests assert what pg-boss 10 does: one that starts failing after an upgrade means
// pg-boss now gives the guarantee, and the queue can move.
import { createHash } from "node:crypto";
import { PGlite } from "@electric-sql/pglite";
import PgBoss from "pg-boss";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PrismaClient } from "../generated/prisma/client.ts";
import { JobQueue } from "../server/jobs/queue.ts";
import { createLogger } from "../server/logging.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { eventually } from "./support/eventually.ts";

type Executor = { executeSql(text: string, values?: unknown[]): Promise<{ rows: unknown[] }> };

/**
 * pg-boss's `db` option on an in-process PGlite: parameterised statements through `query`, the
 * others (its migrations and maintenance: several statements in one BEGIN … COMMIT) through `exec`.
 */
function pgliteExecutor(pglite: PGlite): Executor {
  return {
    async executeSql(text, values) {
      if (values?.length) return pglite.query(text, values);
      const results = await pglite.exec(text);
      return { rows: results.at(-1)?.rows ?? [] };
    },
  };
}

/** pg-boss's `db` option inside a Prisma transaction: its statement commits or rolls back with the caller's. */
const transactionExecutor = (tx: Pick<PrismaClient, "$queryRawUnsafe">): Executor => ({
  executeSql: async (text, values = []) => ({ rows: await tx.$queryRawUnsafe<unknown[]>(text, ...values) }),
});

let db: TestDatabase;
/** pg-boss's database on PGlite: an in-process one of its own, with a Prisma client on it (on PostgreSQL: the test database). */
let pglite: PGlite | undefined;
let prisma: PrismaClient;
const bosses: PgBoss[] = [];
const queues: JobQueue[] = [];
const logger = createLogger("error", () => {});

/** A pg-boss of its own (a "process"): on PostgreSQL with its own pool, on PGlite through the executor. */
async function startBoss(): Promise<PgBoss> {
  const common = { supervise: false, schedule: false, migrate: true } as const;
  const boss = new PgBoss(db.url ? { ...common, connectionString: db.url, max: 3 } : { ...common, db: pgliteExecutor(pglite!) });
  boss.on("error", () => {}); // a worker's failed fetch or a rejected handler is what these tests provoke
  bosses.push(boss);
  await boss.start();
  return boss;
}

beforeAll(async () => {
  db = await createTestDatabase();
  if (db.url) prisma = db.prisma;
  else {
    pglite = new PGlite();
    prisma = new PrismaClient({ adapter: new PrismaPGlite(pglite) });
  }
});
afterAll(async () => {
  await Promise.all(queues.map((q) => q.stop()));
  for (const boss of bosses) await boss.stop({ graceful: false, close: true });
  if (pglite) {
    await prisma.$disconnect();
    await pglite.close();
  }
  await db.close();
});

/** A job id (a UUID) that is a function of a dedupe key: pg-boss refuses a second job with the same id. */
function jobIdOf(dedupeKey: string): string {
  const hex = createHash("sha256").update(dedupeKey).digest("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** Counts a job's runs and the most of them running at the same time. */
function overlapCounter() {
  let running = 0;
  let most = 0;
  let runs = 0;
  return {
    async run(ms: number) {
      runs++;
      most = Math.max(most, ++running);
      // the handler's own work: longer than the lease or expiry, as an ACME order or a slow SMTP server can be
      await new Promise((resolve) => setTimeout(resolve, ms));
      running--;
    },
    get most() {
      return most;
    },
    get runs() {
      return runs;
    },
  };
}

describe("pg-boss 10", () => {
  it("when a job is sent inside a Prisma transaction, then it exists iff the transaction commits, and a worker runs it", async () => {
    const boss = await startBoss();
    await boss.createQueue("tx-send");
    await prisma
      .$transaction(async (tx) => {
        await boss.send("tx-send", { n: 1 }, { db: transactionExecutor(tx) });
        throw new Error("abort");
      })
      .catch(() => {});
    expect(await boss.getQueueSize("tx-send")).toBe(0);
    await prisma.$transaction((tx) => boss.send("tx-send", { n: 2 }, { db: transactionExecutor(tx) }));
    const ran: unknown[] = [];
    await boss.work("tx-send", { pollingIntervalSeconds: 0.5 }, async ([job]) => void ran.push(job!.data));
    await eventually(() => expect(ran).toEqual([{ n: 2 }]));
  });

  it("when a job is sent again under its singletonKey after it completed, then a second job exists; a job id derived from the key dedupes", async () => {
    const boss = await startBoss();
    await boss.createQueue("keyed");
    await boss.createQueue("keyed-by-id");
    expect(await boss.send("keyed", {}, { singletonKey: "digest:1" })).not.toBeNull();
    const [first] = await boss.fetch("keyed");
    await boss.complete("keyed", first!.id);
    expect(await boss.send("keyed", {}, { singletonKey: "digest:1" })).not.toBeNull(); // the JobQueue dedupeKey would refuse it
    const id = jobIdOf("digest:1");
    expect(await boss.send("keyed-by-id", {}, { id })).toBe(id);
    const [byId] = await boss.fetch("keyed-by-id");
    await boss.complete("keyed-by-id", byId!.id);
    expect(await boss.send("keyed-by-id", {}, { id: jobIdOf("digest:1") })).toBeNull();
  });

  it("when a handler outlives its job's expireIn while its process lives, then a second run of the job starts meanwhile (no lease renewal)", async () => {
    const boss = await startBoss();
    await boss.createQueue("slow", { name: "slow", expireInSeconds: 1, retryLimit: 3, retryDelay: 0 });
    const counter = overlapCounter();
    await boss.work("slow", { pollingIntervalSeconds: 0.5 }, () => counter.run(2_500));
    await boss.send("slow", {});
    await eventually(() => expect(counter.runs).toBeGreaterThanOrEqual(2), { timeoutMs: 15_000 });
    expect(counter.most).toBeGreaterThanOrEqual(2); // JobQueue: 1 (below)
  });

  it("when a worker's job expired and another worker holds its next attempt, then the first worker's late completion settles that attempt", async () => {
    const [first, second] = [await startBoss(), await startBoss()];
    await first.createQueue("taken-over", { name: "taken-over", expireInSeconds: 1, retryLimit: 3, retryDelay: 0 });
    await first.send("taken-over", {});
    const [job] = await first.fetch("taken-over");
    // the first worker stalls past its expiry; maintenance fails the job and the second worker takes the retry
    const retried = await eventually(
      async () => {
        await second.maintain();
        const [again] = await second.fetch("taken-over");
        expect(again?.id).toBe(job!.id);
        return again!;
      },
      { intervalMs: 250, timeoutMs: 15_000 },
    );
    expect((await second.getJobById("taken-over", retried.id))?.state).toBe("active");
    await first.complete("taken-over", job!.id);
    // JobQueue: the late write changes nothing (its lease token is gone; jobs.test.ts)
    expect((await second.getJobById("taken-over", retried.id))?.state).toBe("completed");
  });
});

describe("JobQueue", () => {
  it("when a handler outlives its lease while its process lives, then the lease is renewed and no second run of the job starts", async () => {
    const counter = overlapCounter();
    const [a, b] = [new JobQueue(db.prisma, logger, { pollMs: 100 }), new JobQueue(db.prisma, logger, { pollMs: 100 })];
    queues.push(a, b);
    for (const q of [a, b]) q.register("slow", () => counter.run(2_500), { maxAttempts: 3, backoffMs: () => 0, leaseMs: 1_000 });
    await a.enqueue(db.prisma, { kind: "slow", payload: {} });
    a.start();
    b.start();
    await eventually(async () => expect(await db.prisma.job.count({ where: { kind: "slow", state: "done" } })).toBe(1), { timeoutMs: 15_000 });
    expect({ runs: counter.runs, most: counter.most }).toEqual({ runs: 1, most: 1 });
  });
});
