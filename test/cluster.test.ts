// WEB_CONCURRENCY=2: two workers of one instance behind one port (node:cluster) count one rate
// limit per API key, held by their primary.
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "./support/eventually.ts";
import { type ServerDatabase, type ServerProcess, expectAnsweredWithinLimit, prepareServerDatabase, processTestBound, startServerProcess } from "./support/server-process.ts";

const LIMIT = 10;
let database: ServerDatabase;
let instance: ServerProcess;

beforeAll(async () => {
  database = await prepareServerDatabase();
  instance = await startServerProcess({
    ...database.envFor(0),
    WEB_CONCURRENCY: "2",
    RATE_LIMIT_REQUESTS: String(LIMIT),
    RATE_LIMIT_WINDOW_SECONDS: "600",
  });
  await eventually(() => instance.logged("workers listening"), { timeoutMs: 60_000 });
  // each worker's own line may come after its primary's (one stdout, several writers)
  await eventually(() => expect(instance.logs.filter((l) => l.msg === "listening")).toHaveLength(2));
}, processTestBound(1));
afterAll(async () => {
  await instance?.stop("SIGTERM");
  await database?.close();
}, 60_000);

/** One request on a connection of its own, so that the primary hands each to the next worker. */
function get(path: string, key: string): Promise<{ status: number; rateLimit?: string; retryAfter?: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: "127.0.0.1", port: instance.port, path, agent: false, headers: { "x-api-key": key } }, (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode!, rateLimit: res.headers["ratelimit"] as string | undefined, retryAfter: res.headers["retry-after"] }));
      })
      .on("error", reject);
  });
}

describe("getUserDatasets on two workers of one instance", () => {
  it("when one key's requests are spread over both workers, then together they get the limit once, not once each", async () => {
    expect(instance.logs.filter((l) => l.msg === "listening")).toHaveLength(2);
    const { tenant } = database;
    const path = `/v1/user-datasets?accountId=${tenant.accountId}&email=${encodeURIComponent(tenant.admin.email)}`;
    const answers = [];
    // ready, as a load balancer would wait for (a connection each: both workers are asked)
    await eventually(async () => expect([(await get("/readyz", "")).status, (await get("/readyz", "")).status]).toEqual([200, 200]), { timeoutMs: 120_000 });
    for (let i = 0; i < LIMIT + 6; i++) answers.push(await get(path, tenant.key));
    expectAnsweredWithinLimit(answers.slice(0, LIMIT), LIMIT - 2);
    expect(answers.slice(LIMIT).map((a) => a.status)).toEqual(Array(6).fill(429));
    expect(answers.slice(0, LIMIT).map((a) => /r=(\d+)/.exec(a.rateLimit!)?.[1])).toEqual(
      Array.from({ length: LIMIT }, (_, i) => String(LIMIT - 1 - i)),
    );
  }, 180_000); // the readiness wait above may take 120 s on a loaded machine

  it("when the instance is stopped, then both workers drain and the primary exits 0", async () => {
    expect(await instance.stop("SIGTERM")).toBe(0);
    expect(instance.logs.filter((l) => l.msg === "stopped")).toHaveLength(3);
  }, 60_000);
});
