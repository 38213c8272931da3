// Issue 23: the webhook address guard applies one rule at save time (createWebhookEndpoint) and at
// delivery time (the sender's agents): host names normalised (case, trailing dot) and every
// IPv6 form that embeds an IPv4 address judged by that address.
import { promises as dnsPromises } from "node:dns";
import http from "node:http";
import type { AddressInfo } from "node:net";
import supertest from "supertest";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { embeddedIpv4, isPublicAddress } from "../server/security/address-guard.ts";
import { createSender } from "../server/notify/delivery.ts";
import { createServices } from "../server/services/index.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { as } from "./support/suite.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";
import { testConfig } from "./support/config.ts";

let api: TestApi;
let tenant: Tenant;
let strict: ReturnType<TestApi["appWith"]>;
/** Counts every connection: a refused URL must never reach it. */
let connections = 0;
const receiver = http.createServer((_req, res) => res.end());
receiver.on("connection", () => (connections += 1));
let port = 0;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api.services, "Guarded");
  // the production default: private addresses refused
  const services = createServices(api.db.prisma, { config: testConfig(), logger: api.logger });
  strict = api.appWith({ services });
  await new Promise<void>((resolve) => receiver.listen(0, "::", resolve));
  port = (receiver.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
  await api?.close();
});
afterEach(() => vi.restoreAllMocks());

/** Spellings of loopback and private addresses that a guard comparing strings would let through. */
const disguised = () => [
  `http://localhost.:${port}/hook`,
  `http://LocalHost.:${port}/hook`,
  `http://api.LOCALHOST.:${port}/hook`,
  `http://[::127.0.0.1]:${port}/hook`,
  `http://[::ffff:127.0.0.1]:${port}/hook`,
  `http://[::ffff:0:7f00:1]:${port}/hook`,
  `http://[64:ff9b::10.0.0.1]:${port}/hook`,
  `http://[2002:a9fe:a9fe::1]:${port}/hook`,
  `http://[2001:0:4136:e378:8000:63bf:80ff:fffe]:${port}/hook`,
  `http://[2001:0:a00:1:8000:63bf:1234:5678]:${port}/hook`,
];

describe("isPublicAddress", () => {
  it.each([
    ["::127.0.0.1", ["127.0.0.1"]],
    ["::ffff:7f00:1", ["127.0.0.1"]],
    ["::ffff:0:a00:1", ["10.0.0.1"]],
    ["64:ff9b::a9fe:a9fe", ["169.254.169.254"]],
    ["2002:c0a8:101::1", ["192.168.1.1"]],
    ["2001:0:4136:e378:8000:63bf:80ff:fffe", ["65.54.227.120", "127.0.0.1"]],
    ["2606:4700:4700::1111", []],
  ])("when the IPv6 address is %s, then it embeds %j", (address, embedded) => {
    expect(embeddedIpv4(address)).toEqual(embedded);
  });

  it.each(["::7f00:1", "::127.0.0.1", "::ffff:0:7f00:1", "64:ff9b:1::1", "2001:0:4136:e378:8000:63bf:80ff:fffe", "2001:0:a00:1::1"])(
    "when %s embeds a non-public IPv4 address, then it is not public",
    (address) => expect(isPublicAddress(address)).toBe(false),
  );

  it.each(["2606:4700:4700::1111", "::ffff:8.8.8.8", "2001:0:808:808:8000:63bf:f7f7:f7f7"])("when %s is or embeds only public addresses, then it is public", (address) =>
    expect(isPublicAddress(address)).toBe(true),
  );
});

describe("createWebhookEndpoint", () => {
  const save = (url: string) => supertest(strict).post("/v1/webhooks/endpoints").set(as(tenant.key)).send({ url, eventTypes: ["lead.created"] });

  it("when the URL spells a non-public host another way (trailing dot, case, IPv4-embedding IPv6), then 400 invalid_webhook_url and nothing saved", async () => {
    for (const url of disguised()) {
      const res = await save(url);
      expect(res.status, url).toBe(400);
      expect(res.body).toMatchObject({ error: "invalid_webhook_url", details: [{ location: "body", field: "url" }] });
    }
    expect(await api.db.prisma.webhookEndpoint.count({ where: { accountId: tenant.accountId } })).toBe(0);
  });

  it("when a name with a trailing dot and upper case resolves to 127.0.0.1, then it is looked up normalised and refused", async () => {
    const lookup = vi.spyOn(dnsPromises, "lookup").mockResolvedValue([{ address: "127.0.0.1", family: 4 }] as never);
    const res = await save("https://Hooks.Partner.EXAMPLE./in");
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_webhook_url");
    expect(lookup).toHaveBeenCalledWith("hooks.partner.example", { all: true });
  });
});

describe("webhook delivery", () => {
  it("when the endpoint's URL spells a non-public host another way, then the attempt is refused as non_public_address and nothing is connected to", async () => {
    const send = createSender({ timeoutMs: 2000, allowPrivateAddresses: false, now: () => new Date() });
    for (const url of disguised()) {
      const outcome = await send({ url, id: "msg_disguised", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", body: "{}" });
      expect(outcome, url).toMatchObject({ ok: false, statusCode: null, errorClass: "non_public_address" });
    }
    expect(connections).toBe(0);
  });
});
