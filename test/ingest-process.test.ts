// `npm run ingest` (scripts/ingest.ts), the writer of the scale-out mode, is wired as the
// service's own writer: with the service's writer off, what it writes still publishes
// lead.created, lead.visited and contact.enriched to webhooks (the service's processes deliver).
import { type ChildProcess, spawn } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newEncryptionKey } from "../server/security/secret-box.ts";
import { createServices } from "../server/services/index.ts";
import { eventually } from "./support/eventually.ts";
import { builtProgram, type ServerDatabase, type ServerProcess, fetchThrough503, prepareServerDatabase, processTestBound, startServerProcess } from "./support/server-process.ts";
import { ADDRESSES, BROWSER_UA } from "./support/tracking.ts";
import { hermeticEnv, testConfig } from "./support/config.ts";
import * as contacts from "../server/services/contacts.ts";

const contact = { email: "ivy.ingest@apple-visitor.example", fullName: "Ivy Ingest", languages: [], experience: [{ title: "Buyer", companyName: "Apple", current: true }] };

/** Answers 204 and keeps each event's type. */
function receiver() {
  const types: string[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      types.push((JSON.parse(body) as { type: string }).type);
      res.writeHead(204).end();
    });
  });
  return { types, server };
}

let database: ServerDatabase;
let service: ServerProcess;
let writer: ChildProcess | undefined;
const hooks = receiver();
const INGEST = builtProgram("scripts/ingest");
const env = () => ({
  ...database.envFor(0),
  CTD_ENCRYPTION_KEY: newEncryptionKey().toString("hex"),
  WEBHOOK_ALLOW_PRIVATE_ADDRESSES: "1",
  TRUST_PROXY: "loopback",
  INGEST_WRITER: "off",
});

beforeAll(async () => {
  database = await prepareServerDatabase();
  await database.inspect((db) => contacts.upsertMany(createServices(db.prisma, { config: testConfig() }), [contact]));
  await new Promise<void>((resolve) => hooks.server.listen(0, "127.0.0.1", resolve));
}, 300_000);
afterAll(async () => {
  writer?.kill("SIGKILL");
  await service?.stop("SIGKILL");
  hooks.server.close();
  await database?.close();
});

describe("npm run ingest", () => {
  it("when the separate writer writes tracked visits and a form, then lead.created, lead.visited and contact.enriched reach the webhook endpoint", async () => {
    const settings = env();
    service = await startServerProcess(settings);
    const { tenant } = database;
    const call = (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) =>
      fetchThrough503(`http://127.0.0.1:${service.port}${url}`, {
        method,
        headers: { "x-api-key": tenant.key, "content-type": "application/json", ...headers },
        body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
      });
    const url = `http://127.0.0.1:${(hooks.server.address() as AddressInfo).port}/hooks`;
    const endpoint = await call("POST", "/v1/webhooks/endpoints", { url, eventTypes: ["lead.created", "lead.visited", "contact.enriched"] });
    expect(endpoint.status).toBe(201);
    const datasetId = tenant.datasets[0]!;
    const query = new URLSearchParams({ formTracking: "true", contactEnrichment: "true", allowIpMasking: "false", formInputAttribute: "name", email: tenant.admin.email });
    expect((await call("PUT", `/v1/datasets/${datasetId}/form-tracking?${query}`)).status).toBe(204);

    writer = spawn(INGEST[0]!, INGEST.slice(1), {
      cwd: path.resolve(import.meta.dirname, ".."),
      env: hermeticEnv({ PATH: process.env.PATH, HOME: process.env.HOME, ...settings, INGEST_POLL_MS: "100" }),
      stdio: ["ignore", "ignore", "inherit"],
    });
    const collect = (events: object[]) =>
      call("POST", `/collect?dataset=${datasetId}`, JSON.stringify({ events }), { "content-type": "text/plain", "x-forwarded-for": ADDRESSES.business, "user-agent": BROWSER_UA });
    const visitorId = "ingestvisitor001";
    const page = { type: "pageview", visitorId, url: "https://www.customer.example/pricing" };
    expect((await collect([page, { type: "form", visitorId, url: page.url, fields: { email: contact.email } }])).status).toBe(202);
    await eventually(() => expect(hooks.types).toContain("lead.created"), { timeoutMs: 60_000 });
    expect((await collect([page])).status).toBe(202);
    await eventually(() => expect([...new Set(hooks.types)].sort()).toEqual(["contact.enriched", "lead.created", "lead.visited"]), { timeoutMs: 60_000 });
  }, processTestBound(1, 120_000)); // the service, then the writer and the deliveries
});
