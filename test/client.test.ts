// The typed partner client against a listening server: the calls a partner writes compile
// against the spec and reach the right operations.
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPartnerClient, type PartnerClient } from "../client/index.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { createTenant, type Tenant, uniqueEmail } from "./support/tenants.ts";

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
  await new Promise((resolve) => server?.close(resolve));
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
