// Two instances of server/main.ts sharing one Redis enforce one rate limit per API key.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "./support/eventually.ts";
import { redisAvailable, redisTestUrl, deleteKeys } from "./support/redis.ts";
import { type ServerDatabase, type ServerProcess, expectAnsweredWithinLimit, prepareServerDatabase, processTestBound, startServerProcess } from "./support/server-process.ts";

const LIMIT = 10;
const withRedis = await redisAvailable();
const prefix = `lead-intel-test:${randomBytes(6).toString("hex")}:`;

let database: ServerDatabase;
let instances: ServerProcess[] = [];

beforeAll(async () => {
  if (!withRedis) return;
  database = await prepareServerDatabase();
  const env = { REDIS_URL: redisTestUrl, REDIS_KEY_PREFIX: prefix, RATE_LIMIT_REQUESTS: String(LIMIT), RATE_LIMIT_WINDOW_SECONDS: "600" };
  // each kept as it listens: the afterAll stops the one that started when the other did not
  await Promise.all([0, 1].map(async (n) => instances.push(await startServerProcess({ ...database.envFor(n), ...env }))));
}, processTestBound(2));
afterAll(async () => {
  for (const instance of instances) instance.child.kill("SIGTERM");
  await Promise.all(instances.map((i) => i.exited));
  await database?.close();
  if (withRedis) await deleteKeys(prefix);
});

describe.skipIf(!withRedis)("getUserDatasets on two instances sharing Redis", () => {
  it("when one key's requests alternate between the instances, then together they get the limit once, not twice", async () => {
    const { tenant } = database;
    // both ready (database and IP data), as a load balancer would wait for
    for (const { port } of instances) await eventually(async () => expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200), { timeoutMs: 120_000 });
    const answers = [];
    for (let i = 0; i < LIMIT + 6; i++) {
      const { port } = instances[i % 2]!;
      const res = await fetch(
        `http://127.0.0.1:${port}/v1/user-datasets?accountId=${tenant.accountId}&email=${encodeURIComponent(tenant.admin.email)}`,
        { headers: { "x-api-key": tenant.key } },
      );
      answers.push({ instance: i % 2, status: res.status, rateLimit: res.headers.get("ratelimit"), retryAfter: res.headers.get("retry-after"), body: await res.json() });
    }
    expectAnsweredWithinLimit(answers.slice(0, LIMIT), LIMIT - 1);
    // the count left is shared: it goes down by one per request whichever instance answers
    expect(answers.slice(0, LIMIT).map((a) => /r=(\d+)/.exec(a.rateLimit!)?.[1])).toEqual(
      Array.from({ length: LIMIT }, (_, i) => String(LIMIT - 1 - i)),
    );
    const refused = answers.slice(LIMIT);
    expect(refused.map((a) => a.status)).toEqual(Array(6).fill(429));
    expect(new Set(refused.map((a) => a.instance))).toEqual(new Set([0, 1]));
    for (const a of refused) {
      expect(a.body).toEqual({ error: "rate_limited", message: expect.any(String), retryAfterSeconds: Number(a.retryAfter) });
      expect(Number(a.retryAfter)).toBeGreaterThan(0);
    }
    for (const instance of instances) {
      expect(instance.logs.some((l) => l.msg === "rate-limit store unreachable: each instance enforces the limit on its own until it is back")).toBe(false);
    }
  }, 300_000); // two readiness waits of up to 120 s each on a loaded machine
});
