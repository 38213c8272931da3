// Custom Tracking Domains without a certificate authority: host-name rules, DNS outcomes against
// a DNS server this file runs on loopback, and every path that ends before ACME (DNS not
// configured, DNS failures, conflicts, replacement). The ACME flow itself is in
// custom-tracking-domains-acme.test.ts, the restart in custom-tracking-domains-restart.test.ts.
import https from "node:https";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { acmeIssuer } from "../server/ctd/acme.ts";
import { isPublicAddress, NonPublicAddressError, outboundAgents } from "../server/security/address-guard.ts";
import { newEncryptionKey, secretBox } from "../server/security/secret-box.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { eventually } from "./support/eventually.ts";
import { startDnsServer, type TestDnsServer } from "./support/dns-server.ts";
import { freePort } from "./support/pebble.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";
import { ACME_CONTACT, datasetWithDomain, fresh, TARGET, trackingDomainConfig } from "./support/tracking-domains.ts";

let api: TestApi;
let dns: TestDnsServer;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  dns = await startDnsServer();
  api = await startTestApi({ config: trackingDomainConfig(dns.address) });
  api.services.jobs.start(); // certificate jobs run on the job queue
  tenant = await createTenant(api.services, "Acme");
  other = await createTenant(api.services, "Globex");
});
afterAll(async () => {
  await api?.services.jobs.stop();
  await dns?.close();
  await api?.close();
});

const as = (key: string) => ({ "x-api-key": key });
const post = (path: string, body: object, key = tenant.key) => api.request().post(path).set(as(key)).send(body);
const validate = (body: object, key?: string) => post("/v1/management/ctd/validate", body, key);
const add = (body: object, key?: string) => post("/v1/management/ctd/add", body, key);
const update = (body: object, key = tenant.key) => api.request().put("/v1/management/ctd/update").set(as(key)).send(body);
const status = (datasetId: string, key = tenant.key) => api.request().get(`/v1/management/ctd?datasetId=${datasetId}`).set(as(key));
const entryOf = (datasetId: string) =>
  api.db.prisma.trackingDomain.findFirst({ where: { datasetId }, include: { job: true } });
/** The queue jobs (kind `certificate`) of a domain entry, oldest first. */
const queueJobsOf = (domainId: bigint) =>
  api.db.prisma.job.findMany({ where: { kind: "certificate", dedupeKey: { startsWith: `certificate:${domainId}:` } }, orderBy: { id: "asc" } });

/** A host under customer.test whose CNAME points at the tracking host. */
function pointed(label = fresh("t")): string {
  const host = `${label}.customer.test`;
  dns.zone.cname.set(host, TARGET);
  return host;
}
const record = (name: string) => ({ type: "CNAME", name, value: TARGET });

describe("validateCustomTrackingDomain", () => {
  it("when the name follows every rule and its CNAME points at the tracking host, then 200 valid with five passed checks and the record", async () => {
    const datasetId = await datasetWithDomain(api.services, tenant, "www.customer.test");
    const ctd = pointed();
    const res = await validate({ datasetId, ctd });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ctd,
      valid: true,
      expectedTarget: TARGET,
      record: record(ctd),
      checks: [
        { name: "hostname", ok: true, message: `${ctd} is a valid host name.` },
        { name: "dataset_domain", ok: true, message: `${ctd} is a sub-domain of the dataset's website domain customer.test.` },
        { name: "reserved", ok: true, message: `${ctd} is not one of our own domains.` },
        { name: "available", ok: true, message: `${ctd} is not registered to another dataset.` },
        { name: "cname", ok: true, message: `${ctd} is a CNAME to ${TARGET}.` },
      ],
    });
    expect(await entryOf(datasetId)).toBeNull(); // validation changes nothing
  });

  it("when the name has capitals and a trailing dot, then it is checked in lower case without the dot", async () => {
    const datasetId = await datasetWithDomain(api.services, tenant);
    const ctd = pointed();
    const res = await validate({ datasetId, ctd: `${ctd.toUpperCase()}.` });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ctd, valid: true, record: record(ctd) });
  });

  it("when the name is internationalised, then it is checked in its punycode form, also against an internationalised dataset domain", async () => {
    const datasetId = await datasetWithDomain(api.services, tenant, "www.bücher.test");
    const ascii = "t.xn--bcher-kva.test";
    dns.zone.cname.set(ascii, TARGET);
    const res = await validate({ datasetId, ctd: "t.Bücher.test" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ctd: ascii, valid: true, record: record(ascii) });
    expect(res.body.checks[0]).toEqual({ name: "hostname", ok: true, message: `${ascii} is a valid host name. It is t.Bücher.test written in ASCII.` });
  });

  const longUnicode = `t.${Array.from({ length: 4 }, () => "ü".repeat(55)).join(".")}.test`;
  it.each([
    ["a space", "not a host.customer.test", "is not a valid host name"],
    ["an empty part", "t..customer.test", "has an empty part"],
    ["a part starting with a hyphen", "-t.customer.test", 'The part "-t" is not allowed'],
    ["an underscore", "t_1.customer.test", 'The part "t_1" is not allowed'],
    ["an IPv4 address", "192.168.1.10", "is an IP address"],
    ["a bracketed IPv6 address", "[::1]", "is not a valid host name"],
    ["a domain apex", "customer.test", "is not a sub-domain"],
    ["a part of 64 characters", `${"a".repeat(64)}.customer.test`, "is longer than 63 characters"],
    ["more than 253 characters in ASCII form", longUnicode, "at most 253 are allowed"],
    ["a percent-encoded character", "t%41.customer.test", "is not a valid host name"],
  ])("when the name has %s, then 200 not valid with only the failed hostname check and no record", async (_what, ctd, fragment) => {
    const datasetId = await datasetWithDomain(api.services, tenant);
    const res = await validate({ datasetId, ctd });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ctd, valid: false, expectedTarget: TARGET, checks: [{ name: "hostname", ok: false, message: expect.stringContaining(fragment) }] });
    expect(dns.asked.some((q) => q.name === ctd.toLowerCase())).toBe(false); // no DNS look-up for a bad name
  });

  it("when the name is not under the dataset's website domain, then the dataset_domain check fails naming an example, and DNS is not asked", async () => {
    const datasetId = await datasetWithDomain(api.services, tenant, "www.customer.test");
    const ctd = `${fresh("t")}.elsewhere.test`;
    dns.zone.cname.set(ctd, TARGET);
    const res = await validate({ datasetId, ctd });
    expect(res.status).toBe(200);
    expect(res.body.valid).toBe(false);
    expect(res.body.checks.map((c: { name: string; ok: boolean }) => [c.name, c.ok])).toEqual([
      ["hostname", true],
      ["dataset_domain", false],
      ["reserved", true],
      ["available", true],
    ]);
    expect(res.body.checks[1].message).toBe(
      `${ctd} is not a sub-domain of the dataset's website domain customer.test: use a name such as t.customer.test, so that tracking stays first-party.`,
    );
    expect(dns.asked.some((q) => q.name === ctd)).toBe(false);
  });

  it.each([["x.leadintel.test"], [TARGET], ["deep.x.LEADINTEL.test"]])("when the name %s is one of our own domains, then the reserved check fails", async (ctd) => {
    const datasetId = await datasetWithDomain(api.services, tenant);
    const res = await validate({ datasetId, ctd });
    expect(res.status).toBe(200);
    expect(res.body.valid).toBe(false);
    expect(res.body.checks).toContainEqual({
      name: "reserved",
      ok: false,
      message: `${ctd.toLowerCase()} belongs to our own domain leadintel.test; use a sub-domain of your website's domain.`,
    });
  });

  it("when the name is another dataset's tracking domain (of another account), then the available check fails", async () => {
    const holder = await datasetWithDomain(api.services, other);
    const ctd = `${fresh("taken")}.customer.test`; // no DNS record: the holder's entry stays pending_dns
    expect((await add({ datasetId: holder, ctd }, other.key)).body.responseCode).toBe(-1);
    const datasetId = await datasetWithDomain(api.services, tenant);
    const res = await validate({ datasetId, ctd });
    expect(res.status).toBe(200);
    expect(res.body.checks).toContainEqual({ name: "available", ok: false, message: `${ctd} is already the custom tracking domain of another dataset; choose another name.` });
    // and for the holder itself it is its own domain, so available
    const own = await validate({ datasetId: holder, ctd }, other.key);
    expect(own.body.checks).toContainEqual({ name: "available", ok: true, message: `${ctd} is not registered to another dataset.` });
  });

  describe("the DNS check", () => {
    const cname = async (setup: (host: string) => void) => {
      const datasetId = await datasetWithDomain(api.services, tenant);
      const ctd = `${fresh("t")}.customer.test`;
      setup(ctd);
      const res = await validate({ datasetId, ctd });
      expect(res.status).toBe(200);
      return { ctd, body: res.body as { valid: boolean; checks: { name: string; ok: boolean; message: string }[] } };
    };
    const cnameCheck = (body: { checks: { name: string }[] }) => body.checks.find((c) => c.name === "cname");

    it("when the name has no record at all, then the cname check fails and says which record to create", async () => {
      const { ctd, body } = await cname(() => {});
      expect(body.valid).toBe(false);
      expect(cnameCheck(body)).toEqual({ name: "cname", ok: false, message: `No DNS record exists for ${ctd}. Create a CNAME record for ${ctd} pointing to ${TARGET}.` });
    });

    it("when the name has an address record but no CNAME, then the cname check fails and says to replace the other records", async () => {
      const { ctd, body } = await cname((host) => dns.zone.a.set(host, "203.0.113.7"));
      expect(cnameCheck(body)).toEqual({
        name: "cname",
        ok: false,
        message: `${ctd} exists but has no CNAME record. Create a CNAME record for ${ctd} pointing to ${TARGET} (remove its other records first: a CNAME cannot coexist with them).`,
      });
    });

    it("when the CNAME points elsewhere, then the cname check fails naming both targets", async () => {
      const { ctd, body } = await cname((host) => dns.zone.cname.set(host, "cdn.elsewhere.test"));
      expect(cnameCheck(body)).toEqual({ name: "cname", ok: false, message: `${ctd} is a CNAME to cdn.elsewhere.test, not to ${TARGET}. Change the record to point to ${TARGET}.` });
    });

    it("when the CNAME target differs only in case, then the check passes", async () => {
      const { body } = await cname((host) => dns.zone.cname.set(host, TARGET.toUpperCase()));
      expect(body.valid).toBe(true);
    });

    it.each([
      ["answers SERVFAIL", (host: string) => dns.zone.servfail.add(host), "ESERVFAIL"],
      ["does not answer", (host: string) => dns.zone.silent.add(host), "ETIMEOUT"],
    ])("when the DNS server %s, then the cname check fails as a temporary look-up failure", async (_what, setup, code) => {
      const { ctd, body } = await cname(setup);
      expect(cnameCheck(body)).toEqual({
        name: "cname",
        ok: false,
        message: `The DNS look-up of ${ctd} failed (${code}); this is usually temporary: try again in a few minutes, and check your DNS provider if it persists.`,
      });
    });
  });

  it("when the dataset belongs to another account, then 404", async () => {
    const res = await validate({ datasetId: other.datasets[0], ctd: pointed() });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: `Dataset ${other.datasets[0]} does not exist` });
  });

  it("when ctd is missing, then 400 naming the field", async () => {
    const res = await validate({ datasetId: tenant.datasets[0] });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "body", field: "ctd" }));
  });

  it("when the key is missing, then 401", async () => {
    const res = await api.request().post("/v1/management/ctd/validate").send({ datasetId: tenant.datasets[0], ctd: "t.customer.test" });
    expect(res.status).toBe(401);
    expect(res.body.error).toBe("missing_api_key");
  });
});

describe("addCustomTrackingDomain", () => {
  it("when the CNAME record is missing, then 200 -1 naming the record, the entry is kept pending_dns and the job is finished", async () => {
    const datasetId = await datasetWithDomain(api.services, tenant, "customer.test");
    const ctd = `${fresh("t")}.customer.test`;
    const res = await add({ datasetId, ctd });
    expect(res.status).toBe(200);
    const message = `No DNS record exists for ${ctd}. Create a CNAME record for ${ctd} pointing to ${TARGET}. Then call PUT /v1/management/ctd/update to continue.`;
    expect(res.body).toEqual({ responseCode: -1, responseMessage: message });
    const entry = await entryOf(datasetId);
    expect(entry).toMatchObject({ accountId: tenant.accountId, domain: ctd, state: "pending_dns", reason: message, certificatePem: null });
    expect(entry!.job).toMatchObject({ state: "finished", attempts: 1, orderUrl: null });
    // one queue job ran it, once, and holds no lease (it is marked done just after the answer)
    await eventually(async () => expect(await queueJobsOf(entry!.id)).toMatchObject([{ state: "done", attempts: 1, leaseToken: null }]));

    const read = await status(datasetId);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({
      datasetId,
      ctd,
      state: "pending_dns",
      message,
      expectedTarget: TARGET,
      record: record(ctd),
      attempts: 1,
      updatedAt: entry!.updatedAt.toISOString(),
    });
  });

  it("when the name breaks host-name rules, then 400 invalid_tracking_domain with one detail per broken rule, and nothing is stored", async () => {
    const datasetId = await datasetWithDomain(api.services, tenant, "customer.test");
    const res = await add({ datasetId, ctd: "x.leadintel.test" });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: "invalid_tracking_domain",
      message: expect.stringContaining("The custom tracking domain is not acceptable"),
      details: [
        { location: "body", field: "ctd", message: expect.stringContaining("is not a sub-domain of the dataset's website domain customer.test") },
        { location: "body", field: "ctd", message: "x.leadintel.test belongs to our own domain leadintel.test; use a sub-domain of your website's domain." },
      ],
    });
    expect(await entryOf(datasetId)).toBeNull();
  });

  it("when the domain is another dataset's, then 409 and nothing is stored for this dataset", async () => {
    const holder = await datasetWithDomain(api.services, other);
    const ctd = `${fresh("t")}.customer.test`;
    await add({ datasetId: holder, ctd }, other.key);
    const datasetId = await datasetWithDomain(api.services, tenant);
    const res = await add({ datasetId, ctd });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: "conflict", message: `${ctd} is already the custom tracking domain of another dataset` });
    expect(await entryOf(datasetId)).toBeNull();
  });

  it("when the dataset already has another domain, then 409 pointing to update, and the entry is unchanged", async () => {
    const datasetId = await datasetWithDomain(api.services, tenant);
    const first = `${fresh("t")}.customer.test`;
    await add({ datasetId, ctd: first });
    const res = await add({ datasetId, ctd: `${fresh("t")}.customer.test` });
    expect(res.status).toBe(409);
    expect(res.body.message).toBe(`Dataset ${datasetId} already has the custom tracking domain ${first}; replace it with PUT /v1/management/ctd/update.`);
    expect(await entryOf(datasetId)).toMatchObject({ domain: first });
  });

  it("when the same pending domain is added again, then the job runs again (not a conflict) and answers the new outcome", async () => {
    const datasetId = await datasetWithDomain(api.services, tenant);
    const ctd = `${fresh("t")}.customer.test`;
    await add({ datasetId, ctd });
    dns.zone.cname.set(ctd, "cdn.elsewhere.test");
    const res = await add({ datasetId, ctd });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ responseCode: -1, responseMessage: `${ctd} is a CNAME to cdn.elsewhere.test, not to ${TARGET}. Change the record to point to ${TARGET}. Then call PUT /v1/management/ctd/update to continue.` });
    const entry = (await entryOf(datasetId))!;
    expect(entry.job).toMatchObject({ state: "finished", attempts: 1, generation: 1 });
    // the second add is a new generation with a queue job of its own
    await eventually(async () =>
      expect((await queueJobsOf(entry.id)).map((j) => [j.dedupeKey, j.state])).toEqual([
        [`certificate:${entry.id}:0`, "done"],
        [`certificate:${entry.id}:1`, "done"],
      ]),
    );
  });

  it("when the attempt's queue job was taken over meanwhile (its lease lost), then the attempt changes nothing", async () => {
    const datasetId = await datasetWithDomain(api.services, tenant);
    const ctd = `${fresh("t")}.customer.test`; // no record: the attempt would end pending_dns
    let asked!: () => void;
    const checking = new Promise<void>((resolve) => (asked = resolve));
    let release!: () => void;
    const released = new Promise<"answer">((resolve) => (release = () => resolve("answer")));
    dns.gate = (question) => (question.name === ctd ? (asked(), released) : "answer");
    try {
      const adding = add({ datasetId, ctd }).then((res) => res); // sends it now
      await checking;
      const entry = (await entryOf(datasetId))!;
      const job = (await queueJobsOf(entry.id))[0]!;
      expect(job).toMatchObject({ state: "running", attempts: 1 });
      // another process claimed the job (its lease had run out): a new token, a second attempt
      await api.db.prisma.job.update({ where: { id: job.id }, data: { attempts: 2, leaseToken: "another-process", leaseUntil: new Date(Date.now() + 600_000) } });
      release();
      await eventually(() => expect(api.logs.some((l) => l.includes("certificate job lease lost") && l.includes(ctd))).toBe(true));
      expect(await entryOf(datasetId)).toMatchObject({ state: "provisioning", reason: null, job: { state: "running", attempts: 1, lastError: null } });
      expect((await queueJobsOf(entry.id))[0]).toMatchObject({ state: "running", attempts: 2, leaseToken: "another-process" });
      // the other process ends it
      await api.db.prisma.job.update({ where: { id: job.id }, data: { state: "done", leaseToken: null, leaseUntil: null } });
      await api.db.prisma.trackingDomain.update({ where: { id: entry.id }, data: { state: "pending_dns", reason: "set by the other process" } });
      expect((await adding).body).toEqual({ responseCode: -1, responseMessage: "set by the other process" });
    } finally {
      dns.gate = undefined;
      release();
    }
  });

  it("when the domain's queue job died without settling its progress, then adding it again starts a new generation instead of joining nothing", async () => {
    const datasetId = await datasetWithDomain(api.services, tenant);
    const ctd = `${fresh("t")}.customer.test`;
    await add({ datasetId, ctd }); // pending_dns
    const entry = (await entryOf(datasetId))!;
    await eventually(async () => expect(await queueJobsOf(entry.id)).toMatchObject([{ state: "done" }]));
    // as if the queue gave up on the job and its onDead could not write
    await api.db.prisma.job.updateMany({ where: { dedupeKey: `certificate:${entry.id}:0` }, data: { state: "dead" } });
    await api.db.prisma.certificateJob.update({ where: { domainId: entry.id }, data: { state: "running" } });
    await api.db.prisma.trackingDomain.update({ where: { id: entry.id }, data: { state: "provisioning", reason: null } });
    dns.zone.cname.set(ctd, "cdn.elsewhere.test");
    const res = await add({ datasetId, ctd });
    expect(res.body).toEqual({ responseCode: -1, responseMessage: `${ctd} is a CNAME to cdn.elsewhere.test, not to ${TARGET}. Change the record to point to ${TARGET}. Then call PUT /v1/management/ctd/update to continue.` });
    expect((await entryOf(datasetId))!.job).toMatchObject({ state: "finished", attempts: 1, generation: 1 });
  });

  it("when DNS look-ups keep failing, then each attempt is retried up to the limit and the entry ends failed with the reason", async () => {
    const datasetId = await datasetWithDomain(api.services, tenant);
    const ctd = `${fresh("t")}.customer.test`;
    dns.zone.servfail.add(ctd);
    const res = await add({ datasetId, ctd });
    expect(res.status).toBe(200);
    expect(res.body.responseCode).toBe(-1);
    expect(res.body.responseMessage).toBe(
      `Certificate generation for ${ctd} failed after 3 attempts: The DNS look-up of ${ctd} failed (ESERVFAIL); this is usually temporary: try again in a few minutes, and check your DNS provider if it persists. Fix the cause, then call PUT /v1/management/ctd/update to try again.`,
    );
    const entry = await entryOf(datasetId);
    expect(entry).toMatchObject({ state: "failed", reason: res.body.responseMessage });
    expect(entry!.job).toMatchObject({ state: "finished", attempts: 3, lastError: expect.stringContaining("ESERVFAIL") });
    expect(dns.asked.filter((q) => q.name === ctd && q.type === "CNAME")).toHaveLength(3);
    // one queue job, retried by the queue, ended by its last attempt
    await eventually(async () => expect(await queueJobsOf(entry!.id)).toMatchObject([{ state: "done", attempts: 3, leaseToken: null }]));
    expect((await status(datasetId)).body).toMatchObject({ state: "failed", message: res.body.responseMessage, attempts: 3 });
  });

  it("when the dataset is unknown, then 404", async () => {
    const res = await add({ datasetId: "ds_unknown", ctd: pointed() });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe("not_found");
  });
});

describe("updateCustomTrackingDomain", () => {
  it("when the dataset has no custom tracking domain, then 404 and nothing is created", async () => {
    const datasetId = await datasetWithDomain(api.services, tenant);
    const res = await update({ datasetId, ctd: pointed() });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: `Dataset ${datasetId} has no custom tracking domain; add one first.` });
    expect(await entryOf(datasetId)).toBeNull();
  });

  it("when the new domain still has no CNAME, then 409 dns_not_configured naming the record; the entry now holds the new domain and the old one is free", async () => {
    const datasetId = await datasetWithDomain(api.services, tenant);
    const old = `${fresh("t")}.customer.test`;
    await add({ datasetId, ctd: old });
    const ctd = `${fresh("t")}.customer.test`;
    const res = await update({ datasetId, ctd });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      error: "dns_not_configured",
      message: `No DNS record exists for ${ctd}. Create a CNAME record for ${ctd} pointing to ${TARGET}. Then call PUT /v1/management/ctd/update to continue.`,
    });
    expect(await entryOf(datasetId)).toMatchObject({ domain: ctd, state: "pending_dns" });
    expect(await api.db.prisma.trackingDomain.count({ where: { domain: old } })).toBe(0);
    // the old name can now be another dataset's
    const elsewhere = await datasetWithDomain(api.services, tenant);
    expect((await validate({ datasetId: elsewhere, ctd: old })).body.checks).toContainEqual(expect.objectContaining({ name: "available", ok: true }));
  });

  it("when the new domain is another dataset's, then 409 conflict and the entry keeps its domain", async () => {
    const holder = await datasetWithDomain(api.services, other);
    const taken = `${fresh("t")}.customer.test`;
    await add({ datasetId: holder, ctd: taken }, other.key);
    const datasetId = await datasetWithDomain(api.services, tenant);
    const mine = `${fresh("t")}.customer.test`;
    await add({ datasetId, ctd: mine });
    const res = await update({ datasetId, ctd: taken });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: "conflict", message: `${taken} is already the custom tracking domain of another dataset` });
    expect(await entryOf(datasetId)).toMatchObject({ domain: mine });
  });

  it("when the name breaks a host-name rule, then 400 and the entry is unchanged", async () => {
    const datasetId = await datasetWithDomain(api.services, tenant);
    const mine = `${fresh("t")}.customer.test`;
    await add({ datasetId, ctd: mine });
    const res = await update({ datasetId, ctd: "customer.test" });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_tracking_domain");
    expect(await entryOf(datasetId)).toMatchObject({ domain: mine });
  });

  it("when the dataset is another account's, then 404", async () => {
    const res = await update({ datasetId: other.datasets[1], ctd: pointed() });
    expect(res.status).toBe(404);
  });
});

describe("getCustomTrackingDomain", () => {
  it("when the dataset has no custom tracking domain, then 404", async () => {
    const datasetId = await datasetWithDomain(api.services, tenant);
    const res = await status(datasetId);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: `Dataset ${datasetId} has no custom tracking domain.` });
  });

  it("when the dataset is another account's, then 404", async () => {
    const res = await status(other.datasets[0]);
    expect(res.status).toBe(404);
    expect(res.body.message).toBe(`Dataset ${other.datasets[0]} does not exist`);
  });

  it("when datasetId is missing, then 400", async () => {
    const res = await api.request().get("/v1/management/ctd").set(as(tenant.key));
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "query", field: "datasetId" }));
  });
});

describe("outbound connections of certificate generation", () => {
  it.each([
    ["127.0.0.1", false],
    ["10.1.2.3", false],
    ["172.20.0.1", false],
    ["192.168.0.1", false],
    ["169.254.169.254", false],
    ["100.64.0.1", false],
    ["0.0.0.0", false],
    ["::1", false],
    ["fe80::1", false],
    ["fd00::1", false],
    ["::ffff:127.0.0.1", false],
    ["::ffff:10.0.0.1", false],
    ["8.8.8.8", true],
    ["2606:4700:4700::1111", true],
    ["::ffff:8.8.8.8", true],
  ])("when the address is %s, then it is public: %s", (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected);
  });

  it.each([["127.0.0.1"], ["localhost"]])(
    "when the ACME directory is on %s and the test-only allowance is off, then the issuer refuses to connect",
    async (host) => {
      const port = await freePort();
      const issuer = acmeIssuer(
        { acme: { directoryUrl: `https://${host}:${port}/dir` }, allowPrivateAddresses: false },
        { load: async () => undefined, save: async (_url, key) => key },
      );
      const never = { orderCreated: async () => {}, challengePublished: async () => {}, keyChosen: async () => {} };
      await expect(issuer.issue("t.customer.test", {}, never)).rejects.toThrow(/refusing to connect to (127\.0\.0\.1|localhost): it is or resolves to the non-public address/);
    },
  );

  it.each([["127.0.0.1"], ["localhost"]])("when a connection to %s is opened through the guarded agents, then it is refused before connecting", async (host) => {
    const port = await freePort();
    const { httpsAgent } = outboundAgents({ allowPrivateAddresses: false });
    const error = await new Promise<Error>((resolve) => {
      https.get(`https://${host}:${port}/`, { agent: httpsAgent }, () => resolve(new Error("connected"))).on("error", resolve);
    }).catch((thrown: Error) => thrown);
    expect(error).toBeInstanceOf(NonPublicAddressError);
  });
});

describe("private keys at rest", () => {
  it("when a key is sealed, then the stored text holds no plaintext, opens with the same context only, and fails with another key", () => {
    const box = secretBox(newEncryptionKey());
    const secret = "-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----";
    const sealed = box.seal(secret, "t.customer.test");
    expect(sealed).toMatch(/^v1:/);
    expect(sealed).not.toContain("PRIVATE KEY");
    expect(box.open(sealed, "t.customer.test")).toBe(secret);
    expect(() => box.open(sealed, "u.customer.test")).toThrow();
    expect(() => secretBox(newEncryptionKey()).open(sealed, "t.customer.test")).toThrow();
  });

  it("when the service logged during these tests, then no line holds the ACME contact or a private key", () => {
    expect(api.logs.length).toBeGreaterThan(0);
    expect(api.logs.filter((l) => l.includes(ACME_CONTACT) || l.includes("PRIVATE KEY"))).toEqual([]);
  });
});
