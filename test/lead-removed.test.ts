// Issue 38 item 1: a lead that stops existing says so. When the evidence withdraws a lead (a second
// organisation's form from the same ISP address) or its last visitor is erased, the partner's
// endpoints get a signed `lead.removed` (checked by the loopback receiver with the Standard
// Webhooks verifier); a lead that returns later (a declared network) starts a new life with one
// `lead.created`. EVENT_TYPES is the spec's WebhookEventType.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { EVENT_TYPES } from "../server/services/webhook-events.ts";
import type { IngestWriter } from "../server/tracking/log/writer.ts";
import { testConfig } from "./support/config.ts";
import { eventually } from "./support/eventually.ts";
import { as } from "./support/suite.ts";
import { startTracking, type TrackingSuite, wiredWriter } from "./support/tracking.ts";
import { Receiver } from "./support/webhook-receiver.ts";
import * as datasets from "../server/services/datasets.ts";

let t: TrackingSuite;
/** The writer with every hook (webhook events): the suite's own publishes none. */
let writer: IngestWriter;
const receiver = new Receiver();
let seq = 0;

beforeAll(async () => {
  t = await startTracking({}, { webhooks: testConfig({ WEBHOOK_ALLOW_PRIVATE_ADDRESSES: "1" }).webhooks });
  writer = wiredWriter(t.api);
  await receiver.start();
});
afterAll(async () => {
  await writer?.stop();
  await receiver.close();
  await t?.close();
});

/** The test's endpoint (deleted after each test: its deliveries are signed with its secret). */
let endpointId: string | undefined;
afterEach(async () => {
  if (endpointId) await t.api.request().delete(`/v1/webhooks/endpoints/${endpointId}`).set(as(t.tenant.key)).expect(204);
  endpointId = undefined;
});

async function subscribe(): Promise<void> {
  const res = await t.api.request().post("/v1/webhooks/endpoints").set(as(t.tenant.key)).send({ url: receiver.url, eventTypes: ["lead.created", "lead.removed"] });
  expect(res.status).toBe(201);
  receiver.secret = res.body.secret;
  endpointId = res.body.endpointId;
}

const admin = () => ({ email: t.tenant.admin.email });
const newVisitor = () => `vid${randomBytes(8).toString("hex")}`;
const freshDomain = () => `gone-${++seq}-${randomBytes(3).toString("hex")}.de`;
/** An address of Comcast (AS7922, isp) in a /24 of its own per call. */
const ispAddress = () => `73.${120 + Math.floor(seq / 200)}.${++seq % 200}.7`;

async function dataset(): Promise<string> {
  const id = await datasets.create(t.api.services, t.tenant.accountId, t.tenant.admin.email, { name: `Removed ${++seq}` });
  await t.settings(id, { formTracking: true });
  return id;
}

/** Sends the events, writes them (the learning step after), delivers the webhook events. */
async function send(datasetId: string, ip: string, events: unknown[]): Promise<void> {
  expect((await t.collect(datasetId, ip, events)).status).toBe(202);
  await writer.drain();
  await t.api.services.jobs.drain();
}

/** What the receiver got for this dataset, in order: [type, leadId, reason]. */
const receivedOf = (datasetId: string) =>
  receiver.received.filter((r) => r.verified.data.datasetId === datasetId).map((r) => [r.verified.type, r.verified.data.leadId, r.verified.data.reason]);

/**
 * A visitor of a fresh organisation visits from an ISP address and sends forms with two colleagues'
 * addresses (one person's e-mail names no line that may be a household's): that organisation's lead.
 */
async function leadOfForm(datasetId: string, ip: string): Promise<{ domain: string; email: string; leadId: string }> {
  const [domain, person] = [freshDomain(), newVisitor()];
  const email = `first@${domain}`;
  await send(datasetId, ip, [t.pageView(person), t.form(person, { email }), t.form(person, { email: `colleague@${domain}` })]);
  const [lead] = await t.leads(datasetId);
  expect(lead).toMatchObject({ organizationDomain: domain });
  return { domain, email, leadId: lead!.leadId };
}

// several writes, each with its learning step and deliveries: slow on a busy machine
const slow = 120_000;

describe("webhook events (lead.removed)", () => {
  it("when EVENT_TYPES is compared with the spec's WebhookEventType, then they are the same list", () => {
    const spec = parse(readFileSync(new URL("../spec/openapi.yaml", import.meta.url), "utf8"));
    expect([...EVENT_TYPES]).toEqual(spec.components.schemas.WebhookEventType.enum);
  });

  it("when a second organisation's form withdraws a lead, then a signed lead.removed (reason withdrawn) follows its lead.created; when a declaration brings it back, then one new lead.created", async () => {
    await subscribe();
    const ds = await dataset();
    const ip = ispAddress();
    const { domain, leadId } = await leadOfForm(ds, ip);
    const other = newVisitor();
    await send(ds, ip, [t.pageView(other), t.form(other, { email: `second@${freshDomain()}` })]);
    expect(await t.leads(ds)).toEqual([]);
    await eventually(() => expect(receivedOf(ds)).toEqual([["lead.created", leadId, undefined], ["lead.removed", leadId, "withdrawn"]]));
    const removed = receiver.received.find((r) => r.verified.type === "lead.removed" && r.verified.data.datasetId === ds)!;
    expect(removed.verified.data.lead).toMatchObject({ organizationDomain: domain, visitCount: 0, identitySource: "form_email" });
    expect(removed.headers["webhook-signature"]).toMatch(/^v1,/);

    const declared = await t.api.request().post("/v1/declared-networks").query(admin()).set(as(t.tenant.key))
      .send({ cidr: `${ip}/32`, organizationName: "Back Again GmbH", organizationDomain: domain });
    expect(declared.status).toBe(201);
    await eventually(async () => expect(await t.leads(ds)).toHaveLength(1), { message: "the declared network's pending visits attributed" });
    await t.api.services.jobs.drain();
    await eventually(() => expect(receivedOf(ds)).toEqual([
      ["lead.created", leadId, undefined],
      ["lead.removed", leadId, "withdrawn"],
      ["lead.created", leadId, undefined],
    ]));
    await t.api.request().delete(`/v1/declared-networks/${declared.body.id}`).query(admin()).set(as(t.tenant.key)).expect(204);
  }, slow);

  it("when the lead's only visitor is erased, then a lead.removed with reason erased", async () => {
    await subscribe();
    const ds = await dataset();
    const { email, leadId } = await leadOfForm(ds, ispAddress());
    const erased = await t.api.request().post("/v1/privacy/erasures").query(admin()).set(as(t.tenant.key)).send({ subjectEmail: email, datasetId: ds });
    expect(erased.status).toBe(200);
    expect(erased.body.counts).toMatchObject({ visits: 1, leadsRemoved: 1 });
    await t.api.services.jobs.drain();
    await eventually(() => expect(receivedOf(ds)).toEqual([["lead.created", leadId, undefined], ["lead.removed", leadId, "erased"]]));
  }, slow);
});
