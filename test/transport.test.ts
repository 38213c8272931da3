// How requests arrive: HTTPS (terminated here or by a trusted proxy), security headers, size
// limits of body, URL and headers, explicit server timeouts, 405 for an unoffered method.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import express from "express";
import helmet from "helmet";
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../server/config.ts";
import { listen, type RunningServer } from "../server/listen.ts";
import { createLogger } from "../server/logging.ts";
import { securityHeaders } from "../server/http/security-headers.ts";
import { loadSpec } from "../server/spec.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";

let api: TestApi;
let tenant: Tenant;
let httpsOnly: supertest.Agent;
const servers: RunningServer[] = [];
const quiet = createLogger("silent");

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api.services, "Transport AG");
  httpsOnly = supertest.agent(api.appWith({ requireHttps: true }));
});
afterAll(async () => {
  for (const server of servers) await server.shutdown();
  await api?.close();
});

const datasetsPath = () => `/v1/user-datasets?accountId=${tenant.accountId}&email=${encodeURIComponent(tenant.admin.email)}`;

/** listen() with the defaults of the configuration and the given changes, on a free loopback port. */
async function serve(app: http.RequestListener, change: (c: ReturnType<typeof loadConfig>) => void = () => {}) {
  const config = loadConfig({ PORT: "0" });
  change(config);
  const server = await listen(app, config, quiet);
  servers.push(server);
  return server;
}

describe("security headers", () => {
  it("when a request succeeds, fails, or reaches an operator endpoint, then helmet's headers are on the response", async () => {
    const answers = [
      await api.request().get(datasetsPath()).set("x-api-key", tenant.key),
      await api.request().get(datasetsPath()),
      await api.request().get("/healthz"),
    ];
    expect(answers.map((r) => r.status)).toEqual([200, 401, 200]);
    for (const res of answers) {
      expect(res.headers["x-content-type-options"]).toBe("nosniff");
      expect(res.headers["strict-transport-security"]).toMatch(/max-age=\d+/);
      expect(res.headers["content-security-policy"]).toContain("default-src 'self'");
      expect(res.headers).not.toHaveProperty("x-powered-by");
    }
  });
});

describe("security headers set in one step", () => {
  /** The headers of one answer, without those that vary per response. */
  const fixedHeaders = (res: supertest.Response) => {
    const { date: _date, ...rest } = res.headers as Record<string, string>;
    return rest;
  };
  it("when the recorded headers answer a request, then they are exactly those helmet's own middleware sends, in its order", async () => {
    const answer = (middleware: express.RequestHandler) => {
      const app = express();
      app.use(middleware);
      app.get("/", (_req, res) => {
        res.json({ ok: true });
      });
      return supertest(app).get("/");
    };
    const [ours, helmets] = [await answer(securityHeaders()), await answer(helmet())];
    expect(Object.keys(ours.headers)).toEqual(Object.keys(helmets.headers));
    expect(fixedHeaders(ours)).toEqual(fixedHeaders(helmets));
    expect(ours.headers).not.toHaveProperty("x-powered-by");
  });

  it("when helmet is given a header that depends on the request (a CSP nonce function), then making them refuses", () => {
    const nonce = (_req: unknown, res: unknown) => `'nonce-${(res as express.Response).locals.nonce}'`;
    expect(() => securityHeaders({ contentSecurityPolicy: { directives: { scriptSrc: ["'self'", nonce] } } })).toThrow(/not fixed/);
  });
});

describe("getUserDatasets over plain HTTP where HTTPS is required", () => {
  it("when the request is plain HTTP, then 403 https_required before the key is looked at", async () => {
    for (const key of [tenant.key, "lik_not_a_real_key_at_all"]) {
      const res = await httpsOnly.get(datasetsPath()).set("x-api-key", key);
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: "https_required", message: expect.stringContaining("HTTPS") });
      expect(res.headers).not.toHaveProperty("ratelimit");
    }
  });

  it("when the client itself claims X-Forwarded-Proto https and no proxy is trusted, then still 403", async () => {
    const res = await httpsOnly.get(datasetsPath()).set("x-api-key", tenant.key).set("x-forwarded-proto", "https");
    expect(res.status).toBe(403);
    expect(res.body.error).toBe("https_required");
  });

  it("when a trusted proxy (TRUST_PROXY=loopback) forwards an HTTPS request, then it is served", async () => {
    const behindProxy = supertest(api.appWith({ requireHttps: true, trustProxy: loadConfig({ TRUST_PROXY: "loopback" }).trustProxy }));
    const res = await behindProxy.get(datasetsPath()).set("x-api-key", tenant.key).set("x-forwarded-proto", "https");
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(2);
    const plain = await behindProxy.get(datasetsPath()).set("x-api-key", tenant.key).set("x-forwarded-proto", "http");
    expect(plain.status).toBe(403);
  });

  it("when an operator endpoint is called over plain HTTP, then it answers (load balancers probe inside the network)", async () => {
    expect((await httpsOnly.get("/readyz")).status).toBe(200);
  });
});

describe("getCreditUsageSummary over plain HTTP where HTTPS is required", () => {
  it("when the request is plain HTTP, then 403 with the credit operations' ErrorVM", async () => {
    const res = await httpsOnly.post("/api/credits/usage/summary").set("x-api-key", tenant.key).send({ from: "2026-01-01", to: "2026-01-31" });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ message: "error.https_required", description: expect.any(String) });
  });
});

describe("TLS terminated by the server (TLS_CERT_FILE, TLS_KEY_FILE)", () => {
  it("when a client calls over https with the server's certificate as CA, then the HTTPS-only app serves it", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "tls-"));
    const certFile = path.join(dir, "cert.pem");
    const keyFile = path.join(dir, "key.pem");
    execFileSync("openssl", [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
      "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
      "-keyout", keyFile, "-out", certFile,
    ], { stdio: "ignore" });
    const config = loadConfig({ TLS_CERT_FILE: certFile, TLS_KEY_FILE: keyFile });
    const server = await serve(api.appWith({ requireHttps: true }), (c) => (c.tls = config.tls));
    expect(server.protocol).toBe("https");

    const res = await new Promise<{ status: number; body: string; tls: boolean }>((resolve, reject) => {
      https
        .get(
          { host: "127.0.0.1", port: server.port, path: datasetsPath(), ca: readFileSync(certFile), headers: { "x-api-key": tenant.key } },
          (r) => {
            const tls = "encrypted" in r.socket;
            let body = "";
            r.on("data", (c) => (body += c));
            r.on("end", () => resolve({ status: r.statusCode!, body, tls }));
          },
        )
        .on("error", reject);
    });
    expect(res.tls).toBe(true);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body).data).toHaveLength(2);
  });
});

describe("addUser body size limit", () => {
  it("when the body is larger than the limit, then 413 payload_too_large and no user is added", async () => {
    const small = supertest(api.appWith({ limits: { bodyBytes: 1024, urlLength: 4096 } }));
    const email = "big.body@example.test";
    const res = await small
      .post(`/v1/users?email=${encodeURIComponent(tenant.admin.email)}`)
      .set("x-api-key", tenant.key)
      .send({ email, name: "x".repeat(2000) });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ error: "payload_too_large", message: expect.stringContaining("1024") });
    expect(await api.db.prisma.user.count({ where: { email } })).toBe(0);
  });
});

describe("getCreditUsageTimeSeries body size limit", () => {
  it("when the body is larger than the limit, then 413 with ErrorVM", async () => {
    const small = supertest(api.appWith({ limits: { bodyBytes: 64, urlLength: 4096 } }));
    const res = await small
      .post("/api/credits/usage/timeseries")
      .set("x-api-key", tenant.key)
      .send({ from: "2026-01-01", to: "2026-01-31", datasetId: tenant.datasets[0], granularity: "day" });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ message: "error.payload_too_large", description: expect.any(String) });
  });
});

describe("getUserDatasets URL length limit", () => {
  it("when the URL is longer than the limit, then 400 url_too_long with one detail for (url)", async () => {
    const short = supertest(api.appWith({ limits: { bodyBytes: 1024, urlLength: 120 } }));
    const res = await short.get(`${datasetsPath()}&pad=${"p".repeat(120)}`).set("x-api-key", tenant.key);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: "url_too_long",
      message: expect.any(String),
      details: [{ location: "query", field: "(url)", message: "must not be longer than 120 characters" }],
    });
    expect((await short.get(datasetsPath()).set("x-api-key", tenant.key)).status).toBe(200);
  });
});

describe("header size limit (MAX_HEADER_BYTES)", () => {
  it("when the headers exceed it, then node answers 431 before the app", async () => {
    const server = await serve(api.app, (c) => (c.limits.headerBytes = 4096));
    const status = await new Promise<number>((resolve, reject) => {
      http
        .get({ host: "127.0.0.1", port: server.port, path: "/healthz", agent: false, headers: { "x-filler": "f".repeat(8192) } }, (r) => {
          r.resume();
          resolve(r.statusCode!);
        })
        .on("error", reject);
    });
    expect(status).toBe(431);
  });
});

describe("server timeouts", () => {
  it("when HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS and KEEP_ALIVE_TIMEOUT_MS are set, then the server uses them", async () => {
    const { timeouts } = loadConfig({ HEADERS_TIMEOUT_MS: "7000", REQUEST_TIMEOUT_MS: "9000", KEEP_ALIVE_TIMEOUT_MS: "65000" });
    const { server } = await serve(api.app, (c) => (c.timeouts = timeouts));
    expect([server.headersTimeout, server.requestTimeout, server.keepAliveTimeout]).toEqual([7000, 9000, 65000]);
  });
});

describe("removeUserDataset and its path", () => {
  it("when PUT is sent to /v1/user-datasets, then 405 with Allow listing the offered methods and nothing changes", async () => {
    const res = await api.request().put("/v1/user-datasets").set("x-api-key", tenant.key).send({ userId: tenant.member.id, datasetId: tenant.datasets[0] });
    expect(res.status).toBe(405);
    expect(res.headers.allow?.split(/,\s*/).sort()).toEqual(["DELETE", "GET", "POST"]);
    expect(res.body).toEqual({ error: "method_not_allowed", message: expect.any(String) });
    const after = await api.request().get(`/v1/user-datasets?accountId=${tenant.accountId}&email=${encodeURIComponent(tenant.member.email)}`).set("x-api-key", tenant.key);
    expect(after.body.data.map((d: { datasetId: string }) => d.datasetId)).toEqual([tenant.datasets[0]]);
  });
});

describe("arrays in request bodies", () => {
  it("when the spec is read, then every array of a request body schema has maxItems", () => {
    const spec = loadSpec() as unknown as { paths: Record<string, Record<string, { requestBody?: unknown }>>; components: { schemas: Record<string, unknown> } };
    const unbounded: string[] = [];
    const seen = new Set<unknown>();
    const visit = (node: unknown, where: string): void => {
      if (!node || typeof node !== "object" || seen.has(node)) return;
      seen.add(node);
      const n = node as Record<string, unknown>;
      if (typeof n.$ref === "string") return visit(spec.components.schemas[n.$ref.split("/").pop()!], n.$ref);
      const type = n.type;
      if ((type === "array" || (Array.isArray(type) && type.includes("array"))) && typeof n.maxItems !== "number") unbounded.push(where);
      for (const [key, value] of Object.entries(n)) visit(value, `${where}/${key}`);
    };
    for (const [p, item] of Object.entries(spec.paths)) for (const [m, op] of Object.entries(item)) visit(op.requestBody, `${m} ${p}`);
    expect(seen.size).toBeGreaterThan(50); // the walk did reach the schemas
    expect(unbounded).toEqual([]);
  });
});

describe("addUser with too many datasetIds", () => {
  it("when datasetIds exceeds maxItems, then 400 naming datasetIds", async () => {
    const res = await api
      .request()
      .post(`/v1/users?email=${encodeURIComponent(tenant.admin.email)}`)
      .set("x-api-key", tenant.key)
      .send({ email: "many.datasets@example.test", name: "Many", datasetIds: Array(101).fill(tenant.datasets[0]) });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "body", field: "datasetIds" }));
  });
});
