// Issue 39 item 5: a lead attributed through a declared network says so. Its identitySource and
// domainSource are both `declared` (the domain was the partner's word, not the curated list's),
// also when the declaration covers evidence against it, which the listing counts.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "./support/eventually.ts";
import { as } from "./support/suite.ts";
import { startTracking, type TrackingSuite } from "./support/tracking.ts";
import * as datasets from "../server/services/datasets.ts";

let t: TrackingSuite;
beforeAll(async () => {
  t = await startTracking();
});
afterAll(async () => {
  await t?.close();
});

const admin = () => ({ email: t.tenant.admin.email });
const newVisitor = () => `vid${randomBytes(8).toString("hex")}`;

describe("declareNetwork", () => {
  it("when visits come from a declared network that other organisations' forms also came from, then the lead is the declared organisation's with identitySource and domainSource declared, and the listing counts the other organisations", async () => {
    const datasetId = await datasets.create(t.api.services, t.tenant.accountId, t.tenant.admin.email, { name: "Declared attribution" });
    await t.settings(datasetId, { formTracking: true });
    const ip = "73.201.7.9"; // Comcast (AS7922, isp)
    const domain = `declared-${randomBytes(3).toString("hex")}.de`;
    const declared = await t.api.request().post("/v1/declared-networks").query(admin()).set(as(t.tenant.key))
      .send({ cidr: "73.201.7.0/28", organizationName: "Declared GmbH", organizationDomain: domain });
    expect(declared.status).toBe(201);

    const [first, second] = [newVisitor(), newVisitor()];
    expect((await t.collect(datasetId, ip, [t.pageView(first), t.form(first, { email: "someone@other-company.fr" })])).status).toBe(202);
    expect((await t.collect(datasetId, ip, [t.pageView(second), t.form(second, { email: "else@third-company.com" })])).status).toBe(202);
    await t.writer.drain();

    await eventually(async () => expect(await t.leads(datasetId)).toHaveLength(1), { message: "the declared network's visits attributed" });
    const [lead] = await t.leads(datasetId);
    expect(lead).toMatchObject({ organizationName: "Declared GmbH", organizationDomain: domain, identitySource: "declared", domainSource: "declared" });

    const listing = await t.api.request().get("/v1/declared-networks").query(admin()).set(as(t.tenant.key));
    const network = listing.body.data.find((n: { id: string }) => n.id === declared.body.id);
    expect(network.conflicts).toEqual({ dynamicLineNames: 0, otherOrganizations: 2, freeMailPeople: 0 });
  });

  it("when a network spanning two ranges (a /23) is declared after visits from both waited, then both are backfilled to its lead, and a visit from outside it keeps waiting", async () => {
    const datasetId = await datasets.create(t.api.services, t.tenant.accountId, t.tenant.admin.email, { name: "Declared /23 backfill" });
    for (const ip of ["73.201.8.9", "73.201.9.9", "73.201.10.9"]) expect((await t.collect(datasetId, ip, [t.pageView(newVisitor())])).status).toBe(202); // Comcast: isp, pending
    await t.writer.drain();
    expect(await t.leads(datasetId)).toHaveLength(0);
    const declared = await t.api.request().post("/v1/declared-networks").query(admin()).set(as(t.tenant.key))
      .send({ cidr: "73.201.8.0/23", organizationName: "Two Ranges GmbH" });
    expect(declared.status).toBe(201);
    await eventually(async () => expect((await t.leads(datasetId)).map((l) => [l.organizationName, l.visitCount])).toEqual([["Two Ranges GmbH", 2]]), {
      message: "both ranges' pending visits backfilled",
    });
  });
});
