// The embedded database in its own process, served over the PostgreSQL protocol on a Unix
// socket: several connections share one PGlite session, so statements and transactions must
// run one at a time and whole, and a connection that leaves must not leave anything behind.
import { mkdtempSync } from "node:fs";
import type net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lockOwner } from "../server/db/data-dir-lock.ts";
import { type Database, openDatabase } from "../server/db/database.ts";
import { SOCKET_PORT } from "../server/db/embedded-server.ts";
import { eventually } from "./support/eventually.ts";

const dataDir = path.join(mkdtempSync(path.join(os.tmpdir(), "pglite-socket-")), "db");
let db: Database;
let socketDir: string;
const clients: pg.Client[] = [];

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ host: socketDir, port: SOCKET_PORT, user: "postgres", database: "postgres" });
  await client.connect();
  clients.push(client);
  return client;
}

/** The client's socket to the embedded process. */
const streamOf = (client: pg.Client) => (client as unknown as { connection: { stream: net.Socket } }).connection.stream;

beforeAll(async () => {
  db = await openDatabase({ dataDir });
  socketDir = (await lockOwner(dataDir))!.socketDir!;
  const setup = await connect();
  await setup.query("CREATE TABLE counter (id int PRIMARY KEY, v int NOT NULL)");
  await setup.query("INSERT INTO counter VALUES (1, 0)");
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.end().catch(() => {})));
  await db?.close();
});

describe("embedded database process", () => {
  it("when many connections send parameterised queries at once, then each gets the answer to its own query", async () => {
    const pool = new pg.Pool({ host: socketDir, port: SOCKET_PORT, user: "postgres", database: "postgres", max: 8 });
    try {
      const answers = await Promise.all(
        Array.from({ length: 400 }, (_, n) => pool.query("SELECT $1::int AS n, $2::text AS s", [n, `s${n}`]).then((r) => r.rows[0])),
      );
      expect(answers).toEqual(Array.from({ length: 400 }, (_, n) => ({ n, s: `s${n}` })));
    } finally {
      await pool.end();
    }
  });

  it("when a transaction holds a row, then another connection's write waits for its commit and builds on it", async () => {
    const [first, second] = [await connect(), await connect()];
    await first.query("BEGIN");
    await first.query("UPDATE counter SET v = v + 1 WHERE id = 1");
    let settled = false;
    const write = second.query("UPDATE counter SET v = v * 10 WHERE id = 1 RETURNING v").finally(() => (settled = true));
    // the write has left the second connection: its bytes wait in the embedded process's socket...
    await eventually(() => expect(streamOf(second).writableLength).toBe(0));
    // ...and the embedded process has queued them by the time it answers the second of two later
    // round trips of the first connection (they were ready when it read the first one's)
    await first.query("UPDATE counter SET v = v + 1 WHERE id = 1");
    await first.query("SELECT 1");
    expect(settled).toBe(false);
    await first.query("COMMIT");
    expect((await write).rows).toEqual([{ v: 20 }]);
  });

  it("when a connection goes away inside a transaction, then its work is rolled back and the others go on", async () => {
    const [leaving, staying] = [await connect(), await connect()];
    await leaving.query("BEGIN");
    await leaving.query("UPDATE counter SET v = -1 WHERE id = 1");
    const waiting = staying.query("SELECT v FROM counter WHERE id = 1");
    leaving.on("error", () => {}); // it is cut off on purpose
    streamOf(leaving).destroy();
    expect((await waiting).rows).toEqual([{ v: 20 }]);
  });

  it("when a statement fails, then the failing connection gets the error and another connection is unaffected", async () => {
    const [failing, other] = [await connect(), await connect()];
    const [failure, fine] = await Promise.allSettled([failing.query("SELECT 1 / $1::int", [0]), other.query("SELECT $1::int AS n", [7])]);
    expect(failure.status).toBe("rejected");
    expect(fine).toEqual({ status: "fulfilled", value: expect.objectContaining({ rows: [{ n: 7 }] }) });
    expect((await failing.query("SELECT 2 AS n")).rows).toEqual([{ n: 2 }]);
  });

  it("when a second process asks to share the database, then it reads what the first wrote", async () => {
    const shared = await openDatabase({ dataDir }, { share: true });
    try {
      expect(await shared.prisma.$queryRaw`SELECT v FROM counter WHERE id = 1`).toEqual([{ v: 20 }]);
    } finally {
      await shared.close();
    }
    expect(await db.ping()).toBe(true);
  });
});
