// A certificate job survives the death of the service: the service runs as a child process, is
// killed (SIGKILL) while pebble is validating its challenge, and a new process on the same
// database takes the job over once the dead one's lease has run out and finishes it. The test's
// DNS server holds pebble's look-ups of the domain, which is how "midway" is made certain.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import * as acme from "acme-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../server/db/database.ts";
import { responseChecker } from "../server/http/response-check.ts";
import { createServices } from "../server/services/index.ts";
import { loadContract } from "../server/contract.ts";
import { createTestDatabase, migratedDataDir } from "./support/database.ts";
import { holdAddressLookups, startDnsServer, type TestDnsServer } from "./support/dns-server.ts";
import { eventually } from "./support/eventually.ts";
import { freePort, type Pebble, pebbleMissing, startPebble } from "./support/pebble.ts";
import { fetchThrough503, type ServerProcess, processTestBound, startServerProcess } from "./support/server-process.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";
import { ACME_CONTACT, datasetWithDomain, fresh, TARGET, trackingDomainConfig, trackingDomainEnv } from "./support/tracking-domains.ts";

if (pebbleMissing) console.warn(`custom-tracking-domains-restart.test.ts skipped: ${pebbleMissing}`);

/** The database the child processes share: a PGlite directory, or a fresh PostgreSQL database. */
async function sharedDatabase(): Promise<{ env: Record<string, string>; open(): Promise<Database>; dispose(): Promise<void> }> {
  if (process.env.TEST_DATABASE_URL) {
    const db = await createTestDatabase();
    return { env: { DATABASE_URL: db.url! }, open: async () => db, dispose: () => db.close() };
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), "ctd-restart-"));
  const dataDir = await migratedDataDir(path.join(dir, "pglite"));
  const open = async () => {
    const db = await openDatabase({ dataDir });
    await db.migrate();
    return db;
  };
  return { env: { DATA_DIR: dataDir }, open, dispose: async () => rmSync(dir, { recursive: true, force: true }) };
}

/** How long the first service may take to reach the CA's validation on a loaded machine. */
const VALIDATION_REACHED_WITHIN_MS = 180_000;

/**
 * Waits until pebble looks the domain up (the CA validates), and fails at once with what the
 * service logged if the add was answered first (an attempt that failed before validation) or
 * the bound passes: a run that cannot reach "midway" says why instead of waiting out the test.
 */
async function untilTheCaValidates(caIsValidating: Promise<void>, add: Promise<Response | Error>, service: ServerProcess): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    caIsValidating.then(() => "validating" as const),
    add.then(async (answer) => (answer instanceof Error ? `failed: ${answer.message}` : `answered ${answer.status}: ${await answer.text()}`)),
    new Promise<string>((resolve) => (timer = setTimeout(resolve, VALIDATION_REACHED_WITHIN_MS, `no validation within ${VALIDATION_REACHED_WITHIN_MS} ms`))),
  ]);
  clearTimeout(timer);
  if (outcome !== "validating") {
    const jobLines = service.lines.filter((l) => l.includes("certificate") || l.includes("acme") || l.includes('"level":50'));
    throw new Error(`the CA never validated before the add ended (${outcome}); the service's certificate lines:\n${jobLines.join("\n")}`);
  }
}

describe.skipIf(!!pebbleMissing)("addCustomTrackingDomain", () => {
  let dns: TestDnsServer;
  let pebble: Pebble;
  let shared: Awaited<ReturnType<typeof sharedDatabase>>;
  let env: Record<string, string>;
  let port: number;
  let tenant: Tenant;
  let datasetId: string;
  const services: ServerProcess[] = [];

  beforeAll(async () => {
    dns = await startDnsServer();
    dns.zone.a.set(TARGET, "127.0.0.1");
    port = await freePort();
    pebble = await startPebble({ httpPort: port, dnsServer: dns.address });
    shared = await sharedDatabase();
    env = {
      ...trackingDomainEnv(dns.address, {
        CTD_ACME_DIRECTORY_URL: pebble.directoryUrl,
        CTD_ACME_CA_FILE: pebble.caFile,
        CTD_JOB_LEASE_SECONDS: "8", // short enough for the second process to take over soon, long enough for a busy machine to renew it
      }),
      ...shared.env,
      HOST: "127.0.0.1",
      PORT: String(port),
      SEED_DEMO: "0",
      NODE_ENV: "development",
    };
    // The tenant is made before any service process opens the database.
    const db = await shared.open();
    const made = createServices(db.prisma, { config: trackingDomainConfig(dns.address) });
    tenant = await createTenant(made, "Acme");
    datasetId = await datasetWithDomain(made, tenant, "customer.test");
    if (!process.env.TEST_DATABASE_URL) await db.close(); // PGlite: one process at a time
  });
  afterAll(async () => {
    for (const service of services) await service.stop("SIGKILL");
    await pebble?.close();
    await dns?.close();
    await shared?.dispose();
  });

  const check = responseChecker(loadContract());
  /** A request to the running child, its body checked against the spec. */
  async function request(operationId: string, method: string, url: string, body?: object) {
    const res = await fetchThrough503(`http://127.0.0.1:${port}${url}`, {
      method,
      headers: { "x-api-key": tenant.key, "content-type": "application/json" },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = (await res.json()) as Record<string, unknown>;
    expect(check(operationId, res.status, "application/json", json)).toBeUndefined();
    return { status: res.status, body: json };
  }
  const getState = () => request("getCustomTrackingDomain", "GET", `/v1/management/ctd?datasetId=${datasetId}`);

  it("when the service is killed while the CA validates, then a restarted service resumes the job and the domain becomes live", async () => {
    const ctd = `${fresh("t")}.customer.test`;
    dns.zone.cname.set(ctd, TARGET);
    // pebble's look-ups of the name wait: the order exists and its challenge is published
    const { caIsValidating, release } = holdAddressLookups(dns, ctd);

    const first = await startServerProcess(env);
    services.push(first);
    const abandoned = fetch(`http://127.0.0.1:${port}/v1/management/ctd/add`, {
      method: "POST",
      headers: { "x-api-key": tenant.key, "content-type": "application/json" },
      body: JSON.stringify({ datasetId, ctd }),
    }).catch((error: Error) => error);
    await untilTheCaValidates(caIsValidating, abandoned, first);
    // Killed at once: pebble gives up a held look-up after some seconds, and a request to the
    // service on a loaded machine can take longer (the attempt then failed before the kill).
    await first.stop("SIGKILL");
    expect(await abandoned).toBeInstanceOf(Error); // the caller's connection died with the service
    // midway: attempt 1 had started, and had neither finished nor failed
    const jobLines = () => first.lines.filter((l) => l.includes('"msg":"certificate job')).map((l) => JSON.parse(l) as { msg: string; attempt?: number });
    await eventually(() => expect(jobLines()).toContainEqual(expect.objectContaining({ msg: "certificate job started", attempt: 1 })));
    expect(jobLines().map((l) => l.msg)).toEqual(["certificate job started"]);

    const second = await startServerProcess(env);
    services.push(second);
    // what a partner sees meanwhile: the domain is still being provisioned
    expect((await getState()).body).toMatchObject({ ctd, state: "provisioning" });
    release();
    // A repeated add joins the resumed job and waits for its outcome.
    const added = await request("addCustomTrackingDomain", "POST", "/v1/management/ctd/add", { datasetId, ctd });
    expect(added.status).toBe(200);
    expect(added.body).toEqual({ responseCode: 0, responseMessage: expect.stringMatching(new RegExp(`^${ctd.replace(/\./g, "\\.")} is live`)) });
    const live = await getState();
    expect(live.body).toMatchObject({ ctd, state: "active", attempts: 2 });
    expect(second.lines.filter((l) => l.includes('"msg":"certificate job started"') && l.includes('"attempt":2'))).toHaveLength(1);
    expect(second.lines.filter((l) => l.includes('"msg":"certificate job started"') && l.includes('"attempt":1'))).toHaveLength(0);
    await second.stop("SIGTERM");

    const db = await shared.open();
    try {
      const entry = await db.prisma.trackingDomain.findFirstOrThrow({ where: { datasetId }, include: { job: true } });
      expect(entry).toMatchObject({ domain: ctd, state: "active" });
      expect(entry.job).toMatchObject({ state: "finished", attempts: 2 });
      // one queue job: its lease ran out with the killed process, the second took it over and ended it
      const queued = await db.prisma.job.findMany({ where: { kind: "certificate", dedupeKey: { startsWith: `certificate:${entry.id}:` } } });
      expect(queued).toMatchObject([{ state: "done", attempts: 2, leaseToken: null }]);
      expect(acme.crypto.readCertificateInfo(entry.certificatePem!).domains.altNames).toEqual([ctd]);
      expect(entry.certificateKeyEnc).not.toContain("PRIVATE KEY");
    } finally {
      if (!process.env.TEST_DATABASE_URL) await db.close();
    }
    const everyLine = [...first.lines, ...second.lines];
    expect(everyLine.filter((l) => l.includes(ACME_CONTACT) || l.includes("PRIVATE KEY"))).toEqual([]);
  }, processTestBound(2)); // two service processes start in turn
});
