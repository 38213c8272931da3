// Custom Tracking Domains: validate, add, update and read a dataset's tracking domain. The
// certificate work itself is a job on the durable queue (certificate-jobs.ts); these operations
// queue or join it and wait for its outcome.
import type { components } from "../../generated/openapi.ts";
import type { TrackingDomainConfig } from "../config.ts";
import { cnameChecker } from "../ctd/dns.ts";
import { type Check, checkHostname } from "../ctd/hostname.ts";
import type { Prisma } from "../../generated/prisma/client.ts";
import type { Db } from "../db/database.ts";
import { isUniqueViolation } from "../db/errors.ts";
import { Invalid, Conflict, NotFound } from "../domain/errors.ts";
import * as access from "./access.ts";
import type { CertificateJobService } from "./certificate-jobs.ts";

type Schemas = components["schemas"];
type Dataset = { id: string; domain: string | null };
type Outcome = Awaited<ReturnType<CertificateJobService["waitForOutcome"]>>;

const GET_PATH = "GET /v1/management/ctd";

// Why long: a service factory whose methods share its dependencies; issue 37 item 4 makes it a module with explicit dependencies.
export function trackingDomainService(db: Db, config: TrackingDomainConfig, jobs: CertificateJobService) {
  const checkCname = cnameChecker(config.dns);
  const record = (name: string): Schemas["DnsRecord"] => ({ type: "CNAME", name, value: config.cnameTarget });
  const entryOf = (accountId: string, datasetId: string) =>
    db.trackingDomain.findUnique({ where: { accountId_datasetId: { accountId, datasetId } } });

  /** The host-name rules and availability; `ascii` is set when the name is well-formed. */
  async function nameChecks(dataset: Dataset, input: string): Promise<{ ascii?: string; checks: Check[] }> {
    const verdict = checkHostname(input, { datasetDomain: dataset.domain, reservedDomains: config.ownDomains });
    const { ascii } = verdict;
    if (!ascii) return verdict;
    const holder = await db.trackingDomain.findUnique({ where: { domain: ascii }, select: { datasetId: true } });
    const taken = holder && holder.datasetId !== dataset.id;
    const available: Check = taken
      ? { name: "available", ok: false, message: `${ascii} is already the custom tracking domain of another dataset; choose another name.` }
      : { name: "available", ok: true, message: `${ascii} is not registered to another dataset.` };
    return { ascii, checks: [...verdict.checks, available] };
  }

  /** The ASCII name, or 400 listing every broken rule (the DNS is the job's business). */
  async function acceptableName(dataset: Dataset, input: string): Promise<string> {
    const { ascii, checks } = await nameChecks(dataset, input);
    const failed = checks.filter((c) => !c.ok && c.name !== "available");
    if (!ascii || failed.length) {
      throw new Invalid(
        `The custom tracking domain is not acceptable: ${failed.map((c) => c.message).join(" ")}`,
        failed.map((c) => ({ location: "body", field: "ctd", message: c.message })),
        "invalid_tracking_domain",
      );
    }
    return ascii;
  }

  /** A new entry with its progress row and queue job (the caller kicks after commit); P2002 means the domain or the dataset's slot is taken. */
  async function create(accountId: string, datasetId: string, domain: string, tx: Prisma.TransactionClient) {
    const created = await tx.trackingDomain.create({
      data: { accountId, datasetId, domain, state: "provisioning", job: { create: {} } },
      select: { id: true },
    });
    await jobs.enqueueFirst(tx, created.id);
    return created.id;
  }

  const takenMessage = (domain: string) => `${domain} is already the custom tracking domain of another dataset`;

  /** The entry for add: created, or the dataset's own one for this domain (requeued unless live). */
  async function register(accountId: string, datasetId: string, domain: string): Promise<bigint> {
    // Twice at most: a concurrent add of the same pair may create the entry between our read and write.
    for (let round = 0; ; round++) {
      const existing = await entryOf(accountId, datasetId);
      if (existing && existing.domain !== domain) {
        throw new Conflict(`Dataset ${datasetId} already has the custom tracking domain ${existing.domain}; replace it with PUT /v1/management/ctd/update.`);
      }
      if (existing) {
        if (existing.state !== "active") await jobs.requeue(existing.id);
        return existing.id;
      }
      try {
        const id = await db.$transaction((tx) => create(accountId, datasetId, domain, tx));
        jobs.kick();
        return id;
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
        if (round > 0 || !(await entryOf(accountId, datasetId))) throw new Conflict(takenMessage(domain));
      }
    }
  }

  /** Replaces the dataset's entry (and its job and certificate) with a new domain. */
  async function replace(entryId: bigint, accountId: string, datasetId: string, domain: string): Promise<bigint> {
    const id = await db.$transaction(async (tx) => {
      const { count } = await tx.trackingDomain.deleteMany({ where: { id: entryId } });
      if (count === 0) throw new Conflict("The dataset's custom tracking domain was changed by another request meanwhile; try again.");
      try {
        return await create(accountId, datasetId, domain, tx);
      } catch (error) {
        throw isUniqueViolation(error) ? new Conflict(takenMessage(domain)) : error;
      }
    });
    jobs.kick();
    return id;
  }

  const stillRunning = (domain: string, datasetId: string) =>
    `Certificate generation for ${domain} is still in progress; it goes on. See its state with ${GET_PATH}?datasetId=${datasetId}, or call add again to wait for it.`;
  const replacedMeanwhile = "The dataset's custom tracking domain was replaced by another request while this one waited.";
  const liveMessage = (domain: string, notAfter: Date | null) =>
    `${domain} is live; its certificate is valid until ${notAfter?.toISOString() ?? "(unknown)"}.`;

  /** What is happening or what to do, for each state. */
  function stateMessage(entry: { state: string; domain: string; reason: string | null; certificateNotAfter: Date | null; job: { state: string; lastError: string | null } | null }): string {
    if (entry.state === "active") return liveMessage(entry.domain, entry.certificateNotAfter);
    if (entry.state !== "provisioning") return entry.reason ?? "";
    const retrying = entry.job?.state === "queued" && entry.job.lastError;
    return retrying
      ? `Certificate generation for ${entry.domain} will be retried after an error: ${entry.job!.lastError}`
      : `Certificate generation for ${entry.domain} is in progress.`;
  }

  /** Why an outcome is not "live", as update's 409 code and message; undefined when it is live. */
  function notLive(outcome: Outcome, datasetId: string): { code: string; message: string } | undefined {
    if (!outcome) return { code: "conflict", message: replacedMeanwhile };
    if (outcome.state === "active") return undefined;
    if (outcome.state === "provisioning") return { code: "certificate_pending", message: stillRunning(outcome.domain, datasetId) };
    const code = outcome.state === "pending_dns" ? "dns_not_configured" : "certificate_failed";
    return { code, message: outcome.reason ?? `${outcome.domain} is not live.` };
  }

  return {
    async validate(accountId: string, datasetId: string, input: string): Promise<Schemas["CustomTrackingDomainValidationResponse"]> {
      const dataset = await access.dataset({ db }, accountId, datasetId);
      const { ascii, checks } = await nameChecks(dataset, input);
      const base = { ctd: ascii ?? input, expectedTarget: config.cnameTarget };
      if (!ascii) return { ...base, valid: false, checks };
      if (checks.every((c) => c.ok)) {
        const dns = await checkCname(ascii, config.cnameTarget);
        checks.push({ name: "cname", ok: dns.kind === "ok", message: dns.message });
      }
      return { ...base, valid: checks.every((c) => c.ok), checks, record: record(ascii) };
    },

    async add(accountId: string, datasetId: string, input: string): Promise<Schemas["CustomTrackingDomainAddResponse"]> {
      const dataset = await access.dataset({ db }, accountId, datasetId);
      const domain = await acceptableName(dataset, input);
      const outcome = await jobs.waitForOutcome(await register(accountId, datasetId, domain));
      const problem = notLive(outcome, datasetId);
      return problem
        ? { responseCode: -1, responseMessage: problem.message }
        : { responseCode: 0, responseMessage: liveMessage(domain, outcome!.certificateNotAfter) };
    },

    async update(accountId: string, datasetId: string, input: string): Promise<void> {
      const dataset = await access.dataset({ db }, accountId, datasetId);
      const domain = await acceptableName(dataset, input);
      const existing = await entryOf(accountId, datasetId);
      if (!existing) throw new NotFound(`Dataset ${datasetId} has no custom tracking domain; add one first.`);
      let id = existing.id;
      if (existing.domain === domain) await jobs.requeue(id);
      else id = await replace(id, accountId, datasetId, domain);
      const problem = notLive(await jobs.waitForOutcome(id), datasetId);
      if (problem) throw new Conflict(problem.message, problem.code);
    },

    async status(accountId: string, datasetId: string): Promise<Schemas["CustomTrackingDomainStatus"]> {
      await access.dataset({ db }, accountId, datasetId);
      const entry = await db.trackingDomain.findUnique({
        where: { accountId_datasetId: { accountId, datasetId } },
        include: { job: { select: { state: true, attempts: true, lastError: true } } },
      });
      if (!entry) throw new NotFound(`Dataset ${datasetId} has no custom tracking domain.`);
      return {
        datasetId,
        ctd: entry.domain,
        state: entry.state,
        message: stateMessage(entry),
        expectedTarget: config.cnameTarget,
        record: record(entry.domain),
        attempts: entry.job?.attempts ?? 0,
        ...(entry.certificateNotAfter ? { certificateExpiresAt: entry.certificateNotAfter.toISOString() } : {}),
        updatedAt: entry.updatedAt.toISOString(),
      };
    },
  };
}

export type TrackingDomainService = ReturnType<typeof trackingDomainService>;
