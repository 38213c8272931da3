// The month partitions of the visits (migration 20261125230000_visit_partitions): "Visit_pYYYY_MM"
// holds the visits of one UTC month, "Visit_default" those of a month without a partition. The
// retention job keeps them: it makes this month's partition and the next two ahead (a month found
// in the default partition gets its own, its rows moved there), and drops a past month whole,
// one DROP TABLE instead of deleting its rows, once no dataset with visits in it keeps any: every
// dataset with a visit there has a `retentionDays`, and the month ended more than that many days
// ago. Otherwise the month stays and the per-row deletes take its expired visits (the month at a
// retention's edge, or one shared with a dataset that keeps its visits).
// The same on PostgreSQL and the embedded PGlite (PostgreSQL 17, declarative partitioning too).
// A step that fails (its locks busy, a statement too long) is reported and tried again on the next
// run: the per-row deletes that follow purge correctly without partitions, only more slowly.
import type { Db } from "../../db/database.ts";
import { dropVisitPartition, moveVisitsOfMonth } from "../write/visit-store.ts";

/** Months made ahead of the current one. */
export const MONTHS_AHEAD = 2;
const DEFAULT_PARTITION = "Visit_default";
const NAME = /^Visit_p(\d{4})_(\d{2})$/;
/**
 * How long a change waits for its locks (a partition's making locks the default partition, a drop
 * the visits table, each for a moment): when busy it gives up, and the next run tries again, rather
 * than queue every query on the visits behind it. Below DATABASE_QUERY_TIMEOUT_MS (default 5 s).
 */
const LOCK_TIMEOUT = "1s";

export interface Month {
  /** The partition's table name. */
  name: string;
  /** First instant of the month (UTC). */
  from: Date;
  /** First instant of the next month. */
  to: Date;
}

/** The UTC month of `at`, `offset` months on. */
export function monthOf(at: Date, offset = 0): Month {
  const from = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + offset, 1));
  const to = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + 1, 1));
  const name = `Visit_p${from.getUTCFullYear()}_${String(from.getUTCMonth() + 1).padStart(2, "0")}`;
  return { name, from, to };
}

export interface PartitionResult {
  /** Partitions made now. */
  created: string[];
  /** Visits moved from the default partition into the partitions made. */
  moved: number;
  /** Partitions dropped now (whole months past retention). */
  dropped: string[];
  /** Partition changes given up because their locks were busy (tried again by the next run). */
  busy: number;
  /** Steps that failed otherwise, with their error (tried again by the next run). */
  failed: string[];
}

/** SQLSTATE lock_not_available: `lock_timeout` ran out. */
const LOCK_NOT_AVAILABLE = "55P03";

function isLockTimeout(error: unknown): boolean {
  const text = String((error as { message?: unknown })?.message ?? error);
  return text.includes(LOCK_NOT_AVAILABLE) || /lock timeout/i.test(text);
}

/** The month partitions there are, by name. */
export async function visitMonths(db: Db): Promise<Month[]> {
  const rows = await db.$queryRaw<{ name: string }[]>`
    SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = '"Visit"'::regclass ORDER BY 1`;
  return rows.flatMap(({ name }) => {
    const match = NAME.exec(name);
    return match ? [monthOf(new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, 1)))] : [];
  });
}

/** A transaction whose statements wait at most LOCK_TIMEOUT for a lock; false when one was busy. */
async function locked(db: Db, change: (tx: Pick<Db, "$executeRawUnsafe" | "$queryRawUnsafe">) => Promise<void>): Promise<boolean> {
  try {
    await db.$transaction(async (tx) => {
      await tx.$executeRawUnsafe(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      await change(tx);
    }, { timeout: 30_000 }); // a few statements, each bounded by the pool's statement timeout
    return true;
  } catch (error) {
    if (isLockTimeout(error)) return false;
    throw error;
  }
}

/**
 * Makes the partition of `month`: a table of its own that takes the month's visits from the
 * default partition (which is locked meanwhile: no visit of the month lands there in between),
 * then attached to "Visit". The visits moved, or undefined when the locks were busy.
 */
async function createPartition(db: Db, month: Month): Promise<number | undefined> {
  let moved = 0;
  const range = `FROM ('${month.from.toISOString()}') TO ('${month.to.toISOString()}')`;
  const done = await locked(db, async (tx) => {
    await tx.$executeRawUnsafe(`LOCK TABLE "${DEFAULT_PARTITION}" IN ACCESS EXCLUSIVE MODE`);
    await tx.$executeRawUnsafe(`CREATE TABLE "${month.name}" (LIKE "Visit" INCLUDING DEFAULTS)`);
    moved = await moveVisitsOfMonth(tx, DEFAULT_PARTITION, month);
    // its keys, indexes and foreign keys come from "Visit" as it is attached
    await tx.$executeRawUnsafe(`ALTER TABLE "Visit" ATTACH PARTITION "${month.name}" FOR VALUES ${range}`);
  });
  return done ? moved : undefined;
}

/**
 * Drops the partition of a past month when no dataset that keeps a visit of it at `at` has one
 * there: a dataset without retention keeps all, one with `retentionDays` those after
 * `at - retentionDays`, so it may keep one of the month while that instant is before the month's
 * end. One index probe per such dataset, not a scan of the month. True when dropped, false when
 * it holds a visit to keep, undefined when the locks were busy.
 */
async function dropIfExpired(db: Db, month: Month, at: Date): Promise<boolean | undefined> {
  let dropped = false;
  const done = await locked(db, async (tx) => {
    const [{ keep }] = await tx.$queryRawUnsafe<[{ keep: boolean }]>(
      `SELECT EXISTS (
         SELECT 1 FROM "Dataset" d
         WHERE (d."retentionDays" IS NULL OR $1::timestamptz - make_interval(days => d."retentionDays") < $2::timestamptz)
           AND EXISTS (SELECT 1 FROM "${month.name}" v WHERE v."datasetId" = d.id)) AS keep`,
      at,
      month.to,
    );
    if (keep) return;
    await dropVisitPartition(tx, month.name);
    dropped = true;
  });
  return done ? dropped : undefined;
}

/** The months of the visits in the default partition (each gets a partition of its own). */
async function strandedMonths(db: Db): Promise<Month[]> {
  const stranded = await db.$queryRawUnsafe<{ month: Date }[]>(
    `SELECT DISTINCT date_trunc('month', "at" AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS month FROM "${DEFAULT_PARTITION}"`,
  );
  return stranded.map((r) => monthOf(r.month));
}

/**
 * At `at`: makes the partitions of this month, the next MONTHS_AHEAD and every month found in the
 * default partition, then drops the past months whose visits are all past retention. A step that
 * fails is reported in the result and the next steps still run.
 */
export async function maintainVisitPartitions(db: Db, at: Date): Promise<PartitionResult> {
  const result: PartitionResult = { created: [], moved: 0, dropped: [], busy: 0, failed: [] };
  const step = async (what: string, run: () => Promise<void>) => {
    try {
      await run();
    } catch (error) {
      result.failed.push(`${what}: ${String((error as Error)?.message ?? error).split("\n")[0]}`);
    }
  };
  const wanted = Array.from({ length: MONTHS_AHEAD + 1 }, (_, i) => monthOf(at, i));
  await step("reading the default partition", async () => {
    wanted.push(...(await strandedMonths(db)));
  });
  const have = new Set((await visitMonths(db)).map((m) => m.name));
  for (const month of wanted) {
    if (have.has(month.name)) continue;
    have.add(month.name);
    await step(`making ${month.name}`, async () => {
      const moved = await createPartition(db, month);
      if (moved === undefined) result.busy += 1;
      else {
        result.created.push(month.name);
        result.moved += moved;
      }
    });
  }
  for (const month of await visitMonths(db)) {
    if (month.to > monthOf(at).from) continue; // this month and later: never whole in the past
    await step(`dropping ${month.name}`, async () => {
      const dropped = await dropIfExpired(db, month, at);
      if (dropped === undefined) result.busy += 1;
      else if (dropped) result.dropped.push(month.name);
    });
  }
  return result;
}
