// The operator's endpoints (spec/operator.yaml) and the request log: liveness, readiness from the
// database, Prometheus metrics, all without an API key; one structured log line per request.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import supertest from "supertest";
import { createLogger } from "../server/logging.ts";
import { createApp } from "../server/app.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";

let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api.services, "Observed Corp");
});
afterAll(() => api?.close());

describe("GET /healthz", () => {
  it("when called without a key, then 200 ok and no request log line", async () => {
    const before = api.logs.length;
    const res = await api.request().get("/healthz");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "ok" });
    expect(api.logs.length).toBe(before);
  });
});

describe("GET /readyz", () => {
  it("when the database answers, then 200 ready", async () => {
    const res = await api.request().get("/readyz");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "ready", checks: { database: true } });
  });

  it("when the database does not answer, then 503 unavailable", async () => {
    const app = createApp({ db: { ...api.db, ping: async () => false }, services: api.services, logger: createLogger("silent") });
    const res = await supertest(app).get("/readyz");
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ status: "unavailable", checks: { database: false } });
  });
});

describe("GET /metrics", () => {
  const scrape = async () => (await api.request().get("/metrics")).text;
  const sample = (text: string, name: string) => Number(new RegExp(`^${name.replace(/[{}"]/g, "\\$&")} (\\S+)$`, "m").exec(text)?.[1] ?? 0);

  it("when partner requests were answered, then the duration histogram counts them by operation and status", async () => {
    const series = 'http_request_duration_seconds_count{operation_id="getUserDatasets",status="404"}';
    const before = sample(await scrape(), series);
    await api.request().get(`/v1/user-datasets?accountId=${tenant.accountId}&email=nobody%40y.example`).set("x-api-key", tenant.key);
    const res = await api.request().get("/metrics");
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toContain("text/plain");
    expect(sample(res.text, series)).toBe(before + 1);
    expect(res.text).toContain("# TYPE http_requests_in_flight gauge");
    expect(res.text).toContain("# TYPE rate_limit_rejections_total counter");
    expect(res.text).toContain("process_cpu_seconds_total");
  });
});

describe("request log", () => {
  it("when a partner request is answered, then one JSON line holds request id, operationId, status, duration and account id, and neither key nor e-mail", async () => {
    const res = await api
      .request()
      .get(`/v1/user-datasets?accountId=${tenant.accountId}&email=${encodeURIComponent(tenant.admin.email)}`)
      .set("x-api-key", tenant.key);
    expect(res.status).toBe(200);
    const raw = api.logs.find((l) => l.includes(res.headers["x-request-id"]!) && l.includes('"msg":"request"'))!;
    expect(raw.split('"requestId"').length - 1, raw).toBe(1); // the key once: JSON.parse would hide a repeat
    const line = JSON.parse(raw);
    expect(line.requestId).toBe(res.headers["x-request-id"]);
    expect(line).toMatchObject({
      level: "info",
      msg: "request",
      method: "GET",
      path: "/v1/user-datasets",
      operationId: "getUserDatasets",
      status: 200,
      durationMs: expect.any(Number),
      accountId: tenant.accountId,
    });
    const text = JSON.stringify(line);
    expect(text).not.toContain(tenant.key);
    expect(text.toLowerCase()).not.toContain(tenant.admin.email.toLowerCase());
  });
});
