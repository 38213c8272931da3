// The typed partner client against a listening server: the calls a partner writes compile
// against the spec and reach the right operations.
import type { AddressInfo } from "node:net";
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPartnerClient, type PartnerClient, type PartnerClientOptions, retryAfterSeconds } from "../client/index.ts";
import { memoryRateLimiter } from "../server/rate-limiter.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { createTenant, type Tenant, uniqueEmail } from "./support/tenants.ts";
import * as contacts from "../server/services/contacts.ts";

let api: TestApi;
let tenant: Tenant;
let server: Server;
let client: PartnerClient;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api.services, "Client Co");
  server = api.app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  const { port } = server.address() as AddressInfo;
  client = createPartnerClient({ baseUrl: `http://127.0.0.1:${port}/`, apiKey: tenant.key });
});
afterAll(async () => {
  if (server) await new Promise((resolve) => server.close(resolve));
  await api?.close();
});

describe("typed client", () => {
  it("when a partner creates a dataset and grants a new user access, then the user's datasets list it", async () => {
    const email = uniqueEmail("client");
    const created = await client.POST("/v1/datasets", {
      params: { query: { email: tenant.admin.email } },
      body: { name: "Typed client site", domain: "typed.example" },
    });
    expect(created.response.status).toBe(200);
    const datasetId = created.data!.id;

    const added = await client.POST("/v1/users", {
      params: { query: { email: tenant.admin.email } },
      body: { email, name: "Cleo Client", datasetIds: [datasetId] },
    });
    expect(added.response.status).toBe(204);

    const listed = await client.GET("/v1/user-datasets", { params: { query: { accountId: tenant.accountId, email } } });
    expect(listed.data?.data.map((row) => [row.datasetId, row.datasetName])).toEqual([[datasetId, "Typed client site"]]);
    expect(listed.response.headers.get("x-request-id")).toBeTruthy();
  });

  it("when the API answers an error, then the client returns its typed body in `error`", async () => {
    const res = await client.PUT("/v1/datasets/{datasetId}/name", {
      params: { path: { datasetId: "ds_doesnotexist0000" }, query: { humanName: "x", email: tenant.admin.email } },
    });
    expect(res.response.status).toBe(404);
    expect(res.status).toBe(404);
    expect(res.error).toEqual({ error: "not_found", message: expect.any(String) });
  });

  it("when the key is wrong, then 401 with the specified body", async () => {
    const { port } = server.address() as AddressInfo;
    const stranger = createPartnerClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: "lik_wrong" });
    const res = await stranger.GET("/v1/user-datasets", { params: { query: { accountId: tenant.accountId, email: tenant.admin.email } } });
    expect(res.response.status).toBe(401);
    expect(res.error).toMatchObject({ error: "invalid_api_key" });
  });
});

/** Listens on a loopback port; returns the base URL and a closer. */
async function listening(server: Server): Promise<{ url: string; close: () => Promise<void> }> {
  server.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** What the client put on the wire, attempt by attempt. */
interface Sent {
  method: string;
  path: string;
  headers: Headers;
  status: number;
}
function recordingFetch(sent: Sent[]): NonNullable<PartnerClientOptions["fetch"]> {
  return async (request) => {
    const headers = new Headers(request.headers);
    const response = await fetch(request);
    sent.push({ method: request.method, path: new URL(request.url).pathname, headers, status: response.status });
    return response;
  };
}

describe("typed client: headers", () => {
  it("when headers are given as Headers objects (client and call), then both reach the server beside the key", async () => {
    const sent: Sent[] = [];
    const { port } = server.address() as AddressInfo;
    const traced = createPartnerClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: tenant.key,
      headers: new Headers({ "x-partner-trace": "client-level" }),
      fetch: recordingFetch(sent),
    });
    const res = await traced.GET("/v1/user-datasets", {
      params: { query: { accountId: tenant.accountId, email: tenant.admin.email } },
      headers: new Headers({ "x-call-trace": "call-level" }),
    });
    expect(res.response.status).toBe(200);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.headers.get("x-partner-trace")).toBe("client-level");
    expect(sent[0]!.headers.get("x-call-trace")).toBe("call-level");
    expect(sent[0]!.headers.get("x-api-key")).toBe(tenant.key);
  });
});

describe("typed client: retries", () => {
  it("when a look-up is rate limited, then the client waits Retry-After and retries with the same Idempotency-Key, charged once", async () => {
    const account = await createTenant(api.services, "Retry Co");
    await contacts.upsertMany(api.services, [
      { email: "rita.retry@retry.example", fullName: "Rita Retry", languages: [], experience: [{ title: "CTO", companyName: "Retry Co", current: true }] },
    ]);
    // One request per second for this key: the first call takes the window, the look-up gets 429.
    const limited = await listening(createServer(api.appWith({ rateLimiter: memoryRateLimiter({ requests: 1, windowSeconds: 1 }) })));
    try {
      const sent: Sent[] = [];
      const partner = createPartnerClient({ baseUrl: limited.url, apiKey: account.key, fetch: recordingFetch(sent), retry: { maxAttempts: 3, maxWaitSeconds: 5 } });
      const first = await partner.GET("/v1/user-datasets", { params: { query: { accountId: account.accountId, email: account.admin.email } } });
      expect(first.response.status).toBe(200);

      const found = await partner.POST("/v1/email-lookup", {
        params: { query: { datasetId: account.datasets[0] } },
        body: { email: "rita.retry@retry.example" },
      });
      expect(found.response.status).toBe(200);
      expect(found.data?.fullName).toBe("Rita Retry");
      const lookups = sent.filter((s) => s.path === "/v1/email-lookup");
      expect(lookups.map((s) => s.status)).toEqual([429, 200]);
      const [key, again] = lookups.map((s) => s.headers.get("idempotency-key"));
      expect(key).toMatch(/^[0-9a-f-]{36}$/);
      expect(again).toBe(key);

      const { port } = server.address() as AddressInfo;
      const unlimited = createPartnerClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: account.key });
      const summary = await unlimited.POST("/api/credits/usage/summary", {
        body: { from: new Date().toISOString().slice(0, 10), to: new Date().toISOString().slice(0, 10), datasetId: account.datasets[0] },
      });
      expect(summary.response.status).toBe(200);
      expect(summary.data?.totals.used).toBe(1);
    } finally {
      await limited.close();
    }
  });

  it("when Retry-After is longer than maxWaitSeconds, then the 429 is returned at once with its typed body", async () => {
    const account = await createTenant(api.services, "Impatient Co");
    const limited = await listening(createServer(api.appWith({ rateLimiter: memoryRateLimiter({ requests: 1, windowSeconds: 60 }) })));
    try {
      const sent: Sent[] = [];
      const partner = createPartnerClient({ baseUrl: limited.url, apiKey: account.key, fetch: recordingFetch(sent), retry: { maxWaitSeconds: 5 } });
      const query = { accountId: account.accountId, email: account.admin.email };
      await partner.GET("/v1/user-datasets", { params: { query } });
      const started = Date.now();
      const res = await partner.GET("/v1/user-datasets", { params: { query } });
      expect(res.response.status).toBe(429);
      expect(res.error).toMatchObject({ error: "rate_limited", retryAfterSeconds: expect.any(Number) });
      // `status` is the answer's, and narrows `error` to the 429 body (no `in` check)
      expect(res.status).toBe(429);
      if (res.status === 429) expect(res.error.retryAfterSeconds).toBeGreaterThan(5);
      expect(sent.map((s) => s.status)).toEqual([200, 429]);
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      await limited.close();
    }
  });

  it("when a proxy keeps answering 503 without Retry-After, then the client stops after maxAttempts with growing waits", async () => {
    const arrivals: number[] = [];
    const proxy = await listening(
      createServer((_req, res) => {
        arrivals.push(Date.now());
        res.writeHead(503, { "content-type": "text/plain" }).end("unavailable");
      }),
    );
    try {
      const partner = createPartnerClient({ baseUrl: proxy.url, apiKey: "lik_any", retry: { maxAttempts: 3, backoffSeconds: 0.1 } });
      const res = await partner.GET("/v1/user-datasets", { params: { query: { accountId: "acc_x", email: "a@b.example" } }, parseAs: "text" });
      expect(res.response.status).toBe(503);
      expect(arrivals).toHaveLength(3);
      const [a, b, c] = arrivals as [number, number, number];
      expect(b - a).toBeGreaterThanOrEqual(90);
      expect(c - b).toBeGreaterThanOrEqual(190);
    } finally {
      await proxy.close();
    }
  });

  it("when Retry-After is an HTTP date or seconds, then it is read as seconds", () => {
    const now = Date.parse("2026-11-23T10:00:00Z");
    expect(retryAfterSeconds("7", now)).toBe(7);
    expect(retryAfterSeconds("Mon, 23 Nov 2026 10:00:30 GMT", now)).toBe(30);
    expect(retryAfterSeconds("soon", now)).toBeUndefined();
    expect(retryAfterSeconds(null, now)).toBeUndefined();
  });
});
