// Rate limit per API key: the RateLimit header fields on every keyed response, 429 with
// Retry-After and RateLimitErrorResponse, per key rather than per account or client, and what
// happens when the shared store (Redis) is unreachable.
import { createServer } from "node:net";
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../server/logging.ts";
import { metricsRegistry } from "../server/metrics.ts";
import { createRateLimiter, memoryRateLimiter, type RateLimiter } from "../server/rate-limiter.ts";
import { recordLogLine, startTestApi, type TestApi } from "./support/api.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";
import * as accounts from "../server/services/accounts.ts";

const LIMIT = 3;
let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  api = await startTestApi({ rateLimiter: memoryRateLimiter({ requests: LIMIT, windowSeconds: 60 }) });
  tenant = await createTenant(api.services, "Throttled Ltd");
});
afterAll(() => api?.close());

function listDatasets(key?: string, app = api) {
  const req = app.request().get(`/v1/user-datasets?accountId=${tenant.accountId}&email=${encodeURIComponent(tenant.admin.email)}`);
  return key === undefined ? req : req.set("x-api-key", key);
}

async function rejections(): Promise<number> {
  return (await metricsRegistry.getSingleMetric("rate_limit_rejections_total")!.get()).values[0]?.value ?? 0;
}

describe("getUserDatasets", () => {
  it("when a key makes more requests than the limit, then each carries RateLimit headers and the one beyond is 429 with Retry-After", async () => {
    const { key } = await accounts.createApiKey(api.services, tenant.accountId, "burst");
    const before = await rejections();
    const answers = [];
    for (let i = 0; i <= LIMIT; i++) answers.push(await listDatasets(key));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    for (const res of answers) expect(res.headers["ratelimit-policy"]).toBe(`"default";q=${LIMIT};w=60`);
    expect(answers.map((r) => /^"default";r=(\d+);t=(\d+)$/.exec(r.headers.ratelimit ?? "")?.[1])).toEqual(["2", "1", "0", "0"]);
    const refused = answers[LIMIT]!;
    const retryAfter = Number(refused.headers["retry-after"]);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refused.body).toEqual({ error: "rate_limited", message: expect.any(String), retryAfterSeconds: retryAfter });
    expect(await rejections()).toBe(before + 1);
  });

  it("when one key is exhausted, then another key of the same account and client is not limited", async () => {
    const spent = (await accounts.createApiKey(api.services, tenant.accountId, "spent")).key;
    for (let i = 0; i < LIMIT; i++) await listDatasets(spent);
    expect((await listDatasets(spent)).status).toBe(429);
    const fresh = await listDatasets((await accounts.createApiKey(api.services, tenant.accountId, "fresh")).key);
    expect(fresh.status).toBe(200);
    expect(fresh.headers.ratelimit).toBe(`"default";r=${LIMIT - 1};t=60`);
  });

  it("when an invalid key is repeated, then it is counted too and gets 429 before 401", async () => {
    const answers = [];
    for (let i = 0; i <= LIMIT; i++) answers.push(await listDatasets("lik_not_a_real_key_at_all"));
    expect(answers.map((r) => r.status)).toEqual([401, 401, 401, 429]);
    expect(answers[0]!.headers.ratelimit).toMatch(/^"default";r=2;t=\d+$/);
  });

  it("when the request carries no key, then 401 without RateLimit headers (there is no quota to report)", async () => {
    const res = await listDatasets();
    expect(res.status).toBe(401);
    expect(res.headers).not.toHaveProperty("ratelimit");
    expect(res.headers).not.toHaveProperty("ratelimit-policy");
  });
});

describe("getCreditUsageSummary", () => {
  it("when the key is over its limit, then 429 with the same body as the /v1 operations", async () => {
    const { key } = await accounts.createApiKey(api.services, tenant.accountId, "credits");
    for (let i = 0; i < LIMIT; i++) await api.request().post("/api/credits/usage/summary").set("x-api-key", key).send({ from: "2026-01-01", to: "2026-01-31" });
    const res = await api.request().post("/api/credits/usage/summary").set("x-api-key", key).send({ from: "2026-01-01", to: "2026-01-31" });
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ error: "rate_limited", message: expect.any(String), retryAfterSeconds: Number(res.headers["retry-after"]) });
  });
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("rate limit with REDIS_URL pointing at a closed port", () => {
  let limiter: RateLimiter;
  let degraded: ReturnType<TestApi["appWith"]>;
  const lines: string[] = [];

  beforeAll(async () => {
    const logger = createLogger("info", (line) => {
      lines.push(line);
      recordLogLine(line);
    });
    const redis = { url: `redis://127.0.0.1:${await closedPort()}`, keyPrefix: "lead-intel-test:" };
    limiter = await createRateLimiter({ requests: LIMIT, windowSeconds: 60, redis }, logger);
    degraded = api.appWith({ rateLimiter: limiter });
  });
  afterAll(() => limiter?.close());

  it("when requests keep coming, then they are served, the instance still enforces the limit, and the outage is logged once", async () => {
    const otherTenant = await createTenant(api.services, "Degraded");
    const answers = [];
    for (let i = 0; i <= LIMIT + 2; i++) {
      answers.push(
        await supertest(degraded)
          .get(`/v1/user-datasets?accountId=${otherTenant.accountId}&email=${encodeURIComponent(otherTenant.admin.email)}`)
          .set("x-api-key", otherTenant.key),
      );
    }
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 429, 429, 429]);
    expect(answers[0]!.headers.ratelimit).toBe(`"default";r=${LIMIT - 1};t=60`);
    const outage = lines.filter((l) => l.includes("rate-limit store unreachable"));
    expect(outage).toHaveLength(1);
    expect(JSON.parse(outage[0]!)).toMatchObject({ level: "warn", error: expect.stringContaining("ECONNREFUSED") });
  });
});
