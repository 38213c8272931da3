// Custom Tracking Domains end to end against pebble, the ACME test server: the service answers
// the HTTP-01 challenges itself on the port pebble validates against, and DNS (for the service's
// CNAME check and for pebble's look-ups) is the test's own server on loopback.
import { createPublicKey } from "node:crypto";
import type { Server } from "node:http";
import * as acme from "acme-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { secretBox } from "../server/security/secret-box.ts";
import { JobQueue } from "../server/jobs/queue.ts";
import { certificateContext, registerCertificateJobs } from "../server/services/certificate-jobs.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { eventually } from "./support/eventually.ts";
import { holdAddressLookups, startDnsServer, type TestDnsServer } from "./support/dns-server.ts";
import { freePort, type Pebble, pebbleMissing, startPebble } from "./support/pebble.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";
import { ACME_CONTACT, datasetWithDomain, fresh, TARGET, trackingDomainConfig } from "./support/tracking-domains.ts";

if (pebbleMissing) console.warn(`custom-tracking-domains-acme.test.ts skipped: ${pebbleMissing}`);

describe.skipIf(!!pebbleMissing)("custom tracking domains with a certificate authority (pebble)", () => {
  let api: TestApi;
  let dns: TestDnsServer;
  let pebble: Pebble;
  let server: Server;
  let config: ReturnType<typeof trackingDomainConfig>;
  let tenant: Tenant;
  let open: (sealed: string, context: string) => string;

  beforeAll(async () => {
    dns = await startDnsServer();
    dns.zone.a.set(TARGET, "127.0.0.1");
    const port = await freePort();
    pebble = await startPebble({ httpPort: port, dnsServer: dns.address });
    config = trackingDomainConfig(dns.address, {
      CTD_ACME_DIRECTORY_URL: pebble.directoryUrl,
      CTD_ACME_CA_FILE: pebble.caFile,
      CTD_JOB_MAX_ATTEMPTS: "2",
    });
    open = secretBox(config.trackingDomains.encryptionKey!).open;
    api = await startTestApi({ config });
    server = await new Promise<Server>((resolve) => {
      const listening = api.app.listen(port, "127.0.0.1", () => resolve(listening));
    });
    api.services.jobs.start(); // certificate jobs run on the job queue
    tenant = await createTenant(api.services, "Acme");
  });
  afterAll(async () => {
    await api?.services.jobs.stop();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    await pebble?.close();
    await dns?.close();
    await api?.close();
  });

  const call = (method: "post" | "put", path: string, body: object) => api.request()[method](path).set("x-api-key", tenant.key).send(body);
  const entryOf = (datasetId: string) => api.db.prisma.trackingDomain.findFirst({ where: { datasetId }, include: { job: true } });
  const jobsStarted = (domain: string) =>
    api.logs.filter((l) => l.includes('"msg":"certificate job started"') && l.includes(`"domain":"${domain}"`)).length;
  function pointed(): string {
    const host = `${fresh("t")}.customer.test`;
    dns.zone.cname.set(host, TARGET);
    return host;
  }

  /** The stored certificate: issued by pebble for `domain`, and its encrypted key belongs to it. */
  function expectIssued(entry: NonNullable<Awaited<ReturnType<typeof entryOf>>>, domain: string): void {
    const info = acme.crypto.readCertificateInfo(entry.certificatePem!);
    expect(info.issuer.commonName).toMatch(/^Pebble Intermediate CA/);
    expect(info.domains.altNames).toEqual([domain]);
    expect(entry.certificateNotAfter).toEqual(info.notAfter);
    expect(entry.certificateKeyEnc).toMatch(/^v1:/);
    expect(entry.certificateKeyEnc).not.toContain("PRIVATE KEY");
    const key = open(entry.certificateKeyEnc!, domain);
    expect(key).toContain("PRIVATE KEY");
    const fromKey = createPublicKey(key).export({ type: "spki", format: "der" });
    const fromCertificate = createPublicKey(entry.certificatePem!).export({ type: "spki", format: "der" });
    expect(fromKey.equals(fromCertificate)).toBe(true);
  }

  describe("addCustomTrackingDomain", () => {
    it("when the CNAME is in place, then validate says valid, add answers 0 with a certificate pebble issued, its key stored encrypted, and the state is active", async () => {
      const datasetId = await datasetWithDomain(api.services, tenant, "www.customer.test");
      const ctd = pointed();
      const validated = await call("post", "/v1/management/ctd/validate", { datasetId, ctd });
      expect(validated.status).toBe(200);
      expect(validated.body.valid).toBe(true);

      const res = await call("post", "/v1/management/ctd/add", { datasetId, ctd });
      expect(res.status).toBe(200);
      const entry = (await entryOf(datasetId))!;
      expect(res.body).toEqual({ responseCode: 0, responseMessage: `${ctd} is live; its certificate is valid until ${entry.certificateNotAfter!.toISOString()}.` });
      expect(entry).toMatchObject({ domain: ctd, state: "active", reason: null });
      expectIssued(entry, ctd);
      expect(entry.job).toMatchObject({ state: "finished", attempts: 1, lastError: null });
      // its queue job ran once and holds no lease (marked done just after the answer)
      await eventually(async () =>
        expect(await api.db.prisma.job.findMany({ where: { dedupeKey: `certificate:${entry.id}:0` } })).toMatchObject([{ state: "done", attempts: 1, leaseToken: null }]),
      );
      expect(entry.job!.orderUrl).toMatch(new RegExp(`^${new URL(pebble.directoryUrl).origin}/`));

      const read = await api.request().get(`/v1/management/ctd?datasetId=${datasetId}`).set("x-api-key", tenant.key);
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({ ctd, state: "active", attempts: 1, certificateExpiresAt: entry.certificateNotAfter!.toISOString() });
    });

    it("when the same domain is added twice at once, then both calls join one job and both answer 0", async () => {
      const datasetId = await datasetWithDomain(api.services, tenant);
      const ctd = pointed();
      const [first, second] = await Promise.all([
        call("post", "/v1/management/ctd/add", { datasetId, ctd }),
        call("post", "/v1/management/ctd/add", { datasetId, ctd }),
      ]);
      expect([first.status, second.status]).toEqual([200, 200]);
      expect(first.body.responseCode).toBe(0);
      expect(second.body).toEqual(first.body);
      expect(jobsStarted(ctd)).toBe(1);
      expect((await entryOf(datasetId))!.job).toMatchObject({ state: "finished", attempts: 1 });

      // and adding the live domain once more answers 0 at once, starting nothing
      const again = await call("post", "/v1/management/ctd/add", { datasetId, ctd });
      expect(again.body).toEqual(first.body);
      expect(jobsStarted(ctd)).toBe(1);
    });

    it("when pebble cannot validate the domain, then after the configured attempts -1 with the CA's reason, and the state is failed", async () => {
      const datasetId = await datasetWithDomain(api.services, tenant);
      const ctd = pointed();
      // our CNAME check passes; pebble's address look-ups of the name fail
      dns.gate = ({ name, type }) => (name === ctd && type !== "CNAME" ? "servfail" : "answer");
      try {
        const res = await call("post", "/v1/management/ctd/add", { datasetId, ctd });
        expect(res.status).toBe(200);
        expect(res.body.responseCode).toBe(-1);
        expect(res.body.responseMessage).toMatch(
          new RegExp(`^Certificate generation for ${ctd} failed after 2 attempts: The certificate authority could not validate the domain: .*could not resolve URL .*\\. Fix the cause`),
        );
        const entry = (await entryOf(datasetId))!;
        expect(entry).toMatchObject({ state: "failed", reason: res.body.responseMessage, certificatePem: null, certificateKeyEnc: null });
        expect(entry.job).toMatchObject({ state: "finished", attempts: 2 });
        expect(jobsStarted(ctd)).toBe(2);
      } finally {
        dns.gate = undefined;
      }
    });
  });

  describe("a queue stopped midway", () => {
    it("when the job queue stops while the CA validates (a graceful shutdown), then the attempt in hand finishes the same ACME order before the stop ends, counted once, and another process's queue does not run it twice", async () => {
      const datasetId = await datasetWithDomain(api.services, tenant);
      const ctd = pointed();
      const { caIsValidating, release } = holdAddressLookups(dns, ctd);
      const other = new JobQueue(api.db.prisma, api.logger, { pollMs: 50 });
      registerCertificateJobs({ db: api.db.prisma, jobs: other, certificates: certificateContext(config.trackingDomains, api.logger, 50) });
      try {
        const adding = call("post", "/v1/management/ctd/add", { datasetId, ctd }).then((res) => res); // sends it now
        await caIsValidating;
        const before = (await entryOf(datasetId))!.job!;
        expect(before).toMatchObject({ state: "running", attempts: 1 });
        const stopping = api.services.jobs.stop(30_000); // lets the attempt in hand finish
        other.start(); // a second process: the job is leased, so it waits
        release();
        const res = await adding;
        await stopping;
        expect(res.body.responseCode).toBe(0);
        const entry = (await entryOf(datasetId))!;
        expect(entry.state).toBe("active");
        expectIssued(entry, ctd);
        expect(entry.job).toMatchObject({ state: "finished", orderUrl: before.orderUrl, attempts: 1 });
        const [queued] = await api.db.prisma.job.findMany({ where: { dedupeKey: `certificate:${entry.id}:0` } });
        expect(queued).toMatchObject({ state: "done", attempts: 1, leaseToken: null });
        expect(api.logs.filter((l) => l.includes('"msg":"certificate order created"') && l.includes(`"domain":"${ctd}"`))).toHaveLength(1);
        expect(jobsStarted(ctd)).toBe(1);
      } finally {
        dns.gate = undefined;
        await other.stop();
        api.services.jobs.start();
      }
    });
  });

  describe("updateCustomTrackingDomain", () => {
    it("when a live domain is replaced by a new one whose CNAME is in place, then 204, the new one is live with its own certificate and the old entry is gone", async () => {
      const datasetId = await datasetWithDomain(api.services, tenant);
      const old = pointed();
      expect((await call("post", "/v1/management/ctd/add", { datasetId, ctd: old })).body.responseCode).toBe(0);
      const ctd = pointed();
      const res = await call("put", "/v1/management/ctd/update", { datasetId, ctd });
      expect(res.status).toBe(204);
      expect(res.text).toBe("");
      const entry = (await entryOf(datasetId))!;
      expect(entry).toMatchObject({ domain: ctd, state: "active" });
      expectIssued(entry, ctd);
      expect(await api.db.prisma.trackingDomain.count({ where: { domain: old } })).toBe(0);
    });

    it("when the live domain itself is updated, then 204 and its certificate is renewed with a new key", async () => {
      const datasetId = await datasetWithDomain(api.services, tenant);
      const ctd = pointed();
      await call("post", "/v1/management/ctd/add", { datasetId, ctd });
      const before = (await entryOf(datasetId))!;
      const res = await call("put", "/v1/management/ctd/update", { datasetId, ctd });
      expect(res.status).toBe(204);
      const after = (await entryOf(datasetId))!;
      expect(after).toMatchObject({ id: before.id, state: "active" });
      expect(after.certificatePem).not.toBe(before.certificatePem);
      expect(open(after.certificateKeyEnc!, ctd)).not.toBe(open(before.certificateKeyEnc!, ctd));
      expectIssued(after, ctd);
    });
  });

  describe("the HTTP-01 challenge answer", () => {
    it("when the CA asks for a published token on its domain, then 200 with the key authorization, without an API key; another host or token gets 404", async () => {
      const datasetId = await datasetWithDomain(api.services, tenant);
      const ctd = pointed();
      await call("post", "/v1/management/ctd/add", { datasetId, ctd });
      const { challengeToken, keyAuthorization } = (await entryOf(datasetId))!.job!;
      const path = `/.well-known/acme-challenge/${challengeToken}`;
      const ok = await api.request().get(path).set("host", `${ctd}:80`);
      expect(ok.status).toBe(200);
      expect(ok.text).toBe(keyAuthorization);
      expect(ok.headers["content-type"]).toMatch(/^text\/plain/);
      expect((await api.request().get(path).set("host", "other.customer.test")).status).toBe(404);
      expect((await api.request().get("/.well-known/acme-challenge/unknown").set("host", ctd)).status).toBe(404);
    });
  });

  it("when the service logged during these tests, then no line holds the ACME contact or a private key", () => {
    expect(api.logs.some((l) => l.includes("certificate job finished"))).toBe(true);
    expect(api.logs.filter((l) => l.includes(ACME_CONTACT) || l.includes("PRIVATE KEY"))).toEqual([]);
  });
});
