// Pending events of shared networks and their attribution, seen through the API: the collector
// keeps page views and forms of ISP, hosting and mobile addresses unlisted; a form with a business
// e-mail makes its ISP address the organisation's (earlier and later visits, form_email); the
// guards (shared address, dynamic line, mobile) attribute nothing; a declared network attributes
// its pending visits; erasure removes a person's pending events and their contribution.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "./support/eventually.ts";
import { testConfig } from "./support/config.ts";
import { retention } from "../server/tracking/privacy/retention.ts";
import { as } from "./support/suite.ts";
import { ADDRESSES, startTracking, type TrackingSuite } from "./support/tracking.ts";
import * as datasets from "../server/services/datasets.ts";
import { AROUND_THE_CLOCK } from "../server/identity/rules.ts";

let t: TrackingSuite;
let seq = 0;
/** The services' and the collector's clock runs this far off (ahead: the lapse of identities; behind: visits at other hours; 0 outside those tests). */
let offsetMs = 0;
const clock = () => new Date(Date.now() + offsetMs);
const DAY = 86_400_000;

beforeAll(async () => {
  t = await startTracking({}, { now: clock, tracking: { now: clock } });
});
afterAll(async () => {
  await t?.close();
});

const admin = () => ({ email: t.tenant.admin.email });
const newVisitor = () => `vid${randomBytes(8).toString("hex")}`;
const freshDomain = () => `firm-${++seq}-${randomBytes(3).toString("hex")}.de`;
/** An address of Comcast (AS7922, isp) in a /24 of its own per call. */
const ispAddress = (host = 5) => `73.${40 + Math.floor(seq / 200)}.${++seq % 200}.${host}`;
/**
 * An ISP address whose PTR name marks a business line (`gw.static.<operator>`): one person's
 * business e-mail names such a line, where a line without the mark may be a household's and needs
 * two people of the organisation (server/identity/rules.ts EMAIL_PEOPLE).
 */
async function businessLine(): Promise<string> {
  const ip = ispAddress();
  await t.api.services.identities.recordPtrEvidence([{ accountId: t.tenant.accountId, ip, networkType: "isp", host: `gw.static.isp-${freshDomain()}` }]);
  return ip;
}

async function dataset(): Promise<string> {
  const id = await datasets.create(t.api.services, t.tenant.accountId, t.tenant.admin.email, { name: `Pending ${++seq}` });
  await t.settings(id, { formTracking: true });
  return id;
}

interface LeadBody {
  leadId: string;
  organizationName: string;
  organizationDomain: string | null;
  identitySource: string;
  identityConfidence: number;
  visitCount: number;
}

async function leads(datasetId: string): Promise<LeadBody[]> {
  const res = await t.api.request().get("/v1/leads").query({ ...admin(), datasetId }).set(as(t.tenant.key));
  expect(res.status).toBe(200);
  return res.body.data;
}

async function visitUrls(datasetId: string, leadId: string): Promise<string[]> {
  const res = await t.api.request().get(`/v1/leads/${leadId}/visits`).query({ ...admin(), datasetId, limit: 100 }).set(as(t.tenant.key));
  expect(res.status).toBe(200);
  return res.body.data.map((v: { url: string }) => v.url).sort();
}

const pending = (datasetId: string) => t.api.db.prisma.pendingEvent.count({ where: { datasetId } });
const page = (visitorId: string, n: number) => t.pageView(visitorId, `https://www.customer.example/p${n}`);


describe("collect (pending events of shared networks)", () => {
  it("when a form with a business e-mail comes from an ISP address, then that address's earlier and later visits are a lead of that domain with identitySource form_email", async () => {
    const ds = await dataset();
    const [ip, domain, person] = [await businessLine(), freshDomain(), newVisitor()];
    expect((await t.collect(ds, ip, [page(person, 1), page(person, 2)])).body).toEqual({ received: 2, queued: 2 });
    await t.writer.drain();
    expect(await leads(ds)).toEqual([]);
    expect(await pending(ds)).toBe(2);

    await t.collect(ds, ip, [t.form(person, { email: `jane@${domain}` })]);
    await t.writer.drain();
    await t.collect(ds, ip, [page(newVisitor(), 3)]);
    await t.writer.drain();

    const [lead, ...others] = await leads(ds);
    expect(others).toEqual([]);
    expect(lead).toMatchObject({ organizationDomain: domain, identitySource: "form_email", visitCount: 3 });
    expect(lead!.identityConfidence).toBeGreaterThanOrEqual(0.5);
    expect(await visitUrls(ds, lead!.leadId)).toEqual(["p1", "p2", "p3"].map((p) => `https://www.customer.example/${p}`));
    expect(await pending(ds)).toBe(0);
  }); // the file's first writes warm the store up (about 15 s alone, twice that on a busy machine): the default bound

  it("when people of two organisations send forms from one ISP address (shared), then nothing of it is attributed, also what was before the second form", async () => {
    const ds = await dataset();
    const [ip, first, second] = [await businessLine(), newVisitor(), newVisitor()];
    await t.collect(ds, ip, [page(first, 1), t.form(first, { email: `a@${freshDomain()}` })]);
    await t.writer.drain();
    expect(await leads(ds)).toHaveLength(1);
    await t.collect(ds, ip, [page(second, 2), t.form(second, { email: `b@${freshDomain()}` })]);
    await t.writer.drain();
    expect(await leads(ds)).toEqual([]);
    expect(await pending(ds)).toBe(4); // both page views and both forms, unlisted again
  });

  it("when the only person who made an ISP address an organisation's comes back from another ISP address (a re-dialled line), then neither address is attributed", async () => {
    const ds = await dataset();
    const [home, later, person] = [await businessLine(), ispAddress(), newVisitor()];
    await t.collect(ds, home, [page(person, 1), t.form(person, { email: `home.worker@${freshDomain()}` })]);
    await t.writer.drain();
    expect(await leads(ds)).toHaveLength(1);
    await t.collect(ds, later, [page(person, 2)]);
    await t.writer.drain();
    expect(await leads(ds)).toEqual([]);
    expect(await pending(ds)).toBe(3);
  });

  it("when the address's PTR name reads like a dynamic access line, then a business e-mail alone attributes nothing (a home office is no company)", async () => {
    const ds = await dataset();
    const ip = ispAddress(77);
    await t.api.services.identities.recordPtrEvidence([{ accountId: t.tenant.accountId, ip, networkType: "isp", host: `dhcp-77.pool.${freshDomain()}` }]);
    const person = newVisitor();
    await t.collect(ds, ip, [page(person, 1), t.form(person, { email: `home@${freshDomain()}` })]);
    await t.writer.drain();
    expect(await leads(ds)).toEqual([]);
    expect(await pending(ds)).toBe(2);
  });

  it("when a business e-mail comes from a mobile carrier's address, then nothing is attributed; once the partner declares the network, its pending visits are the declared organisation's; once it removes the declaration, they wait unlisted again", async () => {
    const ds = await dataset();
    const person = newVisitor();
    const domain = freshDomain();
    await t.collect(ds, ADDRESSES.mobile, [page(person, 1), t.form(person, { email: `field@${domain}` })]);
    await t.writer.drain();
    expect(await leads(ds)).toEqual([]);

    const declared = await t.api.request().post("/v1/declared-networks").query(admin()).set(as(t.tenant.key))
      .send({ cidr: `${ADDRESSES.mobile}/32`, organizationName: "Field Force GmbH", organizationDomain: domain });
    expect(declared.status).toBe(201);
    await eventually(async () => expect(await leads(ds)).toHaveLength(1), { message: "the declared network's pending visits attributed" });
    const [lead] = await leads(ds);
    expect(lead).toMatchObject({ organizationName: "Field Force GmbH", organizationDomain: domain, identitySource: "declared", identityConfidence: 1, visitCount: 1 });
    expect(await pending(ds)).toBe(0);
    // removed: what it attributed goes back to pending before the answer
    await t.api.request().delete(`/v1/declared-networks/${declared.body.id}`).query(admin()).set(as(t.tenant.key)).expect(204);
    expect(await leads(ds)).toEqual([]);
    expect(await pending(ds)).toBe(2);
  });
});

describe("collect (one lead per organisation, whichever way it is recognised first)", () => {
  /** Apple's own network (AS714, curated apple.com) and ISP addresses its people send forms from. */
  const ownNetwork = ADDRESSES.business;
  /** A person of its own per test: one person seen at two addresses holds neither (a re-dialled line). */
  const employee = () => `branch.office.${++seq}@apple.com`;
  const formFromIsp = async (ds: string, ip: string) => {
    await t.collect(ds, ip, [page(newVisitor(), 1), t.form(newVisitor(), { email: employee() })]);
    await t.writer.drain();
  };
  const visitFromOwnNetwork = async (ds: string) => {
    await t.collect(ds, ownNetwork, [page(newVisitor(), 2)]);
    await t.writer.drain();
  };

  it("when evidence names an organisation first and its own network visits later, then both are one lead, recognised by its network", async () => {
    const ds = await dataset();
    const ip = await businessLine();
    await formFromIsp(ds, ip);
    const [byEvidence] = await leads(ds);
    expect(byEvidence).toMatchObject({ organizationDomain: "apple.com", identitySource: "form_email" });

    await visitFromOwnNetwork(ds);
    await t.collect(ds, ip, [page(newVisitor(), 3)]);
    await t.writer.drain();
    const [lead, ...others] = await leads(ds);
    expect(others).toEqual([]);
    expect(lead).toMatchObject({ leadId: byEvidence!.leadId, organizationDomain: "apple.com", identitySource: "network", identityConfidence: 1, visitCount: 3 });
    expect(await visitUrls(ds, lead!.leadId)).toEqual(["p1", "p2", "p3"].map((p) => `https://www.customer.example/${p}`));
  });

  it("when its own network visits first and evidence names it later, then both are one lead too", async () => {
    const ds = await dataset();
    await visitFromOwnNetwork(ds);
    const [byNetwork] = await leads(ds);
    await formFromIsp(ds, await businessLine());
    const [lead, ...others] = await leads(ds);
    expect(others).toEqual([]);
    expect(lead).toMatchObject({ leadId: byNetwork!.leadId, organizationDomain: "apple.com", identitySource: "network", visitCount: 2 });
  });

  it("when an address is the organisation's already and its first visits from there and from the own network are written together, then they are one lead", async () => {
    const ds = await dataset();
    const ip = await businessLine();
    await t.collect(ds, ip, [t.form(newVisitor(), { email: employee() })]);
    await t.writer.drain();
    expect(await leads(ds)).toEqual([]); // a form is no visit: the address has an identity, the dataset no lead yet
    await t.collect(ds, ip, [page(newVisitor(), 1)]);
    await t.collect(ds, ownNetwork, [page(newVisitor(), 2)]);
    await t.writer.drain();
    const found = await leads(ds);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ organizationDomain: "apple.com", identitySource: "network", visitCount: 2 });
  });
});

describe("collect (withdrawal is complete)", () => {
  it("when a PTR domain turns out to be a network operator's (its ranges reach TRACKING_DNS_OPERATOR_PREFIXES), then the visits its name attributed go back to pending at the next learning step, although no event came from their range", async () => {
    const ds = await dataset();
    const [ip, domain] = [ispAddress(9), freshDomain()];
    const ptr = (address: string) => ({ accountId: t.tenant.accountId, ip: address, networkType: "isp" as const, host: `gw.${domain}` });
    await t.api.services.identities.recordPtrEvidence([ptr(ip)]);
    await t.collect(ds, ip, [page(newVisitor(), 1)]);
    await t.writer.drain();
    expect(await leads(ds)).toMatchObject([{ organizationDomain: domain, identitySource: "reverse_dns", visitCount: 1 }]);

    // the same name on 16 other /24s (the default threshold): an operator's, which names nobody
    await t.api.services.identities.recordPtrEvidence(Array.from({ length: 16 }, () => ptr(ispAddress(9))));
    expect(await t.api.services.identities.identityOf(t.tenant.accountId, ip, "isp")).toBeUndefined();
    await t.collect(ds, ispAddress(), [page(newVisitor(), 2)]);
    await t.writer.drain();
    expect(await leads(ds)).toEqual([]);
    expect(await pending(ds)).toBe(2);
  });
});

describe("collect (evidence at the time it was received)", () => {
  it("when the writer learns a form received two days ago (a backlog, a replay), then its evidence dates from then, not from the learning step", async () => {
    const ds = await dataset();
    const [ip, domain] = [await businessLine(), freshDomain()];
    offsetMs = -2 * DAY;
    try {
      await t.collect(ds, ip, [t.form(newVisitor(), { email: `jane@${domain}` })]);
    } finally {
      offsetMs = 0;
    }
    await t.writer.drain();
    const described = await t.api.services.identities.describe(t.tenant.accountId, ip, "isp");
    expect(described).toMatchObject({ organizationDomain: domain });
    expect(Date.now() - Date.parse(described!.firstSeenAt)).toBeGreaterThan(2 * DAY - 60_000);
  });
});

describe("collect (an address used around the clock)", () => {
  it(`when visits at a gateway named under a brand come at every other hour of the day (${AROUND_THE_CLOCK.visits} visitors), then the visits its name attributed go back to pending: a hotel's guests are nobody's`, async () => {
    const ds = await dataset();
    const [ip, hotel] = [ispAddress(7), freshDomain()];
    await t.api.services.identities.recordPtrEvidence([{ accountId: t.tenant.accountId, ip, networkType: "isp", host: `gw.${hotel}` }]);
    try {
      for (let i = 0; i < AROUND_THE_CLOCK.visits; i++) {
        offsetMs = -2 * i * 3_600_000;
        await t.collect(ds, ip, [page(newVisitor(), i)]);
        await t.writer.drain();
        if (i === 0) expect(await leads(ds)).toMatchObject([{ organizationDomain: hotel, identitySource: "reverse_dns", visitCount: 1 }]);
      }
    } finally {
      offsetMs = 0;
    }
    expect(await leads(ds)).toEqual([]);
    expect(await pending(ds)).toBe(AROUND_THE_CLOCK.visits);
  });
});

describe("eraseDataSubject (pending events)", () => {
  it("when a person is erased, then their pending events and their e-mail's contribution to an identity are gone, and the receipt counts the events", async () => {
    const ds = await dataset();
    const [ip, other, person] = [await businessLine(), ispAddress(), newVisitor()];
    const email = `erase.me@${freshDomain()}`;
    // a free-mail form stays pending; the business one makes its address the organisation's
    await t.collect(ds, other, [page(person, 1), t.form(person, { email: "erase.me@gmail.com" })]);
    await t.collect(ds, ip, [t.form(newVisitor(), { email })]);
    await t.writer.drain();
    expect(await t.api.services.identities.identityOf(t.tenant.accountId, ip, "isp")).toBeDefined();
    expect(await pending(ds)).toBe(2);

    const exported = await t.api.request().post("/v1/privacy/exports").query(admin()).set(as(t.tenant.key)).send({ subjectEmail: "erase.me@gmail.com", datasetId: ds });
    expect(exported.status).toBe(200);
    expect(exported.body.pendingEvents.map((e: { type: string }) => e.type).sort()).toEqual(["form", "pageview"]);

    const erased = await t.api.request().post("/v1/privacy/erasures").query(admin()).set(as(t.tenant.key)).send({ subjectEmail: "erase.me@gmail.com", datasetId: ds });
    expect(erased.status).toBe(200);
    expect(erased.body.counts.pendingEvents).toBe(2);
    expect(await pending(ds)).toBe(0);

    await t.api.request().post("/v1/privacy/erasures").query(admin()).set(as(t.tenant.key)).send({ subjectEmail: email }).expect(200);
    expect(await t.api.services.identities.identityOf(t.tenant.accountId, ip, "isp")).toBeUndefined();
  });

  it("when the only person whose e-mail named an ISP address is erased, then the other visitors' visits of that address leave the lead before the erasure answers, and the receipt counts them", async () => {
    const ds = await dataset();
    const [ip, email] = [await businessLine(), `only.one@${freshDomain()}`];
    await t.collect(ds, ip, [t.form(newVisitor(), { email })]);
    await t.writer.drain();
    const colleague = newVisitor();
    await t.collect(ds, ip, [page(colleague, 1), page(colleague, 2)]);
    await t.writer.drain();
    expect(await leads(ds)).toMatchObject([{ visitCount: 2 }]);

    const erased = await t.api.request().post("/v1/privacy/erasures").query(admin()).set(as(t.tenant.key)).send({ subjectEmail: email, datasetId: ds });
    expect(erased.status).toBe(200);
    expect(erased.body.counts).toMatchObject({ withdrawnVisits: 2, leadsRemoved: 1 });
    expect(await leads(ds)).toEqual([]);
    expect(await pending(ds)).toBe(2); // the colleague's page views, unlisted again
  });
});

describe("retention (identities that lapse)", () => {
  it("when the only evidence naming an ISP address's organisation lapses, then the retention job takes its visits back to pending at once", async () => {
    const ds = await dataset();
    const [ip, person] = [await businessLine(), newVisitor()];
    await t.collect(ds, ip, [page(person, 1), t.form(person, { email: `lapsing@${freshDomain()}` })]);
    await t.writer.drain();
    expect(await leads(ds)).toHaveLength(1);
    const config = testConfig();
    offsetMs = (config.tracking.identities.windowDays + 1) * DAY;
    try {
      // pending events are kept (a window far beyond the jump): only the lapse is looked at
      const result = await retention(t.api.db.prisma, config.retention, clock, { pendingDays: 3650, identities: t.api.services.identities }).purge();
      expect(result.withdrawnVisits).toBeGreaterThanOrEqual(1); // with the lapsed attributions of the file's earlier tests
    } finally {
      offsetMs = 0;
    }
    expect(await leads(ds)).toEqual([]);
    expect(await pending(ds)).toBe(2);
  });
});
