// Error bodies: each specified body type where Part 7 names it, and the check that keeps them so.
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadContract } from "../server/contract.ts";
import { responseChecker } from "../server/http/response-check.ts";
import { loadSpec } from "../server/spec.ts";
import type { TestApi } from "./support/api.ts";
import { startWithTenants } from "./support/suite.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";

let api: TestApi;
let tenant: Tenant;

beforeAll(async () => ({ api, tenant } = await startWithTenants()));
afterAll(() => api?.close());

describe("responseChecker", () => {
  const check = responseChecker(loadContract());

  it("when an error body has the documented shape, then it passes", () => {
    expect(check("addUser", 400, "application/json", { error: "validation_failed", message: "m", details: [] })).toBeUndefined();
  });

  it("when a 400 body lacks details, then it is reported", () => {
    expect(check("addUser", 400, "application/json", { error: "validation_failed", message: "m" })).toMatch(/details/);
  });

  it("when a status is not documented for the operation, then it is reported", () => {
    expect(check("addUser", 418, "application/json", {})).toMatch(/not documented/);
  });

  it("when a credit-reporting 400 carries the v1 body, then it is reported", () => {
    expect(check("getCreditUsageSummary", 400, "application/json", { error: "x", message: "y" })).toBeDefined();
  });
});

describe("credit-reporting error bodies", () => {
  it("when the body is invalid and JSON is accepted, then 400 ParameterizedErrorVM naming the field", async () => {
    const res = await api
      .request()
      .post("/api/credits/usage/summary")
      .set("x-api-key", tenant.key)
      .send({ from: "yesterday", to: "2026-01-31" });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ message: "error.validation_failed", params: { from: expect.any(String) } });
    expect(api.logs.join("\n")).not.toContain("does not match the spec");
  });

  it("when the client accepts only text, then 400 ErrorVM", async () => {
    const res = await api
      .request()
      .post("/api/credits/usage/summary")
      .set("x-api-key", tenant.key)
      .set("accept", "text/plain")
      .send({ to: "2026-01-31" });
    expect(res.status).toBe(400);
    expect(res.type).toBe("text/plain");
    expect(JSON.parse(res.text)).toEqual({ message: "error.validation_failed", description: expect.any(String) });
  });

  it("when the key is missing, then 401 with the same body as everywhere", async () => {
    const res = await api.request().post("/api/credits/usage/timeseries").send({ from: "2026-01-01", to: "2026-01-31" });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: "missing_api_key", message: expect.any(String) });
  });
});

describe("methods the spec does not give a path", () => {
  it("when PATCH is sent to /v1/users, then 405 with an Allow header", async () => {
    const res = await api.request().patch("/v1/users").set("x-api-key", tenant.key).send({});
    expect(res.status).toBe(405);
    expect(res.headers.allow).toContain("POST");
    expect(res.body).toEqual({ error: "method_not_allowed", message: expect.any(String) });
  });
});

describe("user ids beyond 2^53-1", () => {
  it("when a path id cannot be represented exactly, then 400, not 500", async () => {
    const res = await api.request().put("/v1/users/99999999999999999999/name").set("x-api-key", tenant.key).send({ name: "x" });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "path", field: "userId" }));
  });
});

describe("unexpected failures", () => {
  it("when a service fails unexpectedly, then 500 internal_error that reveals nothing of the failure, and the log has it", async () => {
    // a database whose membership writes fail (the rename's statement), everything else as it is
    const exploded = () => Promise.reject(new Error("database exploded near secret-table"));
    const { db } = api.services;
    const membership = new Proxy(db.membership, { get: (model, name) => (name === "updateMany" ? exploded : Reflect.get(model, name)) });
    const failing = new Proxy(db, { get: (client, name) => (name === "membership" ? membership : Reflect.get(client, name)) });
    const app = api.appWith({ services: { ...api.services, db: failing } });
    const res = await supertest(app).put(`/v1/users/${tenant.member.id}/name`).set("x-api-key", tenant.key).send({ name: "Boom" });
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: "internal_error", message: expect.any(String) });
    expect(JSON.stringify(res.body)).not.toContain("secret-table");
    const logged = api.logs.find((line) => line.includes(String(res.headers["x-request-id"])) && line.includes('"level":"error"'));
    expect(logged).toContain("secret-table");
  });
});
