// Custom Tracking Domains: validate, add, update and read a dataset's tracking domain. The
// certificate work itself is a job on the durable queue (certificate-jobs.ts, also the store of the
// domain entries); these operations queue or join it and wait for its outcome.
import type { components } from "../../generated/openapi.ts";
import { type Check, checkHostname } from "../ctd/hostname.ts";
import { isUniqueViolation } from "../db/errors.ts";
import { Invalid, Conflict, NotFound } from "../domain/errors.ts";
import * as access from "./access.ts";
import { type CertificateJobDeps, createDomainEntry, deleteDomainEntry, type DomainOutcome, requeue, waitForOutcome } from "./certificate-jobs.ts";

type Schemas = components["schemas"];
type Dataset = { id: string; domain: string | null };

/** The certificate work's deps: the database (access checks included), the queue and the certificate context. */
export type TrackingDomainDeps = CertificateJobDeps;

const GET_PATH = "GET /v1/management/ctd";

const record = ({ certificates }: TrackingDomainDeps, name: string): Schemas["DnsRecord"] => ({ type: "CNAME", name, value: certificates.config.cnameTarget });

const entryOf = ({ db }: TrackingDomainDeps, accountId: string, datasetId: string) =>
  db.trackingDomain.findUnique({ where: { accountId_datasetId: { accountId, datasetId } } });

/** The host-name rules and availability; `ascii` is set when the name is well-formed. */
async function nameChecks({ db, certificates }: TrackingDomainDeps, dataset: Dataset, input: string): Promise<{ ascii?: string; checks: Check[] }> {
  const verdict = checkHostname(input, { datasetDomain: dataset.domain, reservedDomains: certificates.config.ownDomains });
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
async function acceptableName(deps: TrackingDomainDeps, dataset: Dataset, input: string): Promise<string> {
  const { ascii, checks } = await nameChecks(deps, dataset, input);
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

const takenMessage = (domain: string) => `${domain} is already the custom tracking domain of another dataset`;

/** The entry for add: created, or the dataset's own one for this domain (requeued unless live). */
async function register(deps: TrackingDomainDeps, accountId: string, datasetId: string, domain: string): Promise<bigint> {
  // Twice at most: a concurrent add of the same pair may create the entry between our read and write.
  for (let round = 0; ; round++) {
    const existing = await entryOf(deps, accountId, datasetId);
    if (existing && existing.domain !== domain) {
      throw new Conflict(`Dataset ${datasetId} already has the custom tracking domain ${existing.domain}; replace it with PUT /v1/management/ctd/update.`);
    }
    if (existing) {
      if (existing.state !== "active") await requeue(deps, existing.id);
      return existing.id;
    }
    try {
      const id = await deps.db.$transaction((tx) => createDomainEntry(deps, tx, { accountId, datasetId, domain }));
      deps.jobs.wake();
      return id;
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      if (round > 0 || !(await entryOf(deps, accountId, datasetId))) throw new Conflict(takenMessage(domain));
    }
  }
}

/** Replaces the dataset's entry (and its job and certificate) with a new domain. */
async function replace(deps: TrackingDomainDeps, entryId: bigint, entry: { accountId: string; datasetId: string; domain: string }): Promise<bigint> {
  const id = await deps.db.$transaction(async (tx) => {
    if (!(await deleteDomainEntry(tx, entryId))) throw new Conflict("The dataset's custom tracking domain was changed by another request meanwhile; try again.");
    try {
      return await createDomainEntry(deps, tx, entry);
    } catch (error) {
      throw isUniqueViolation(error) ? new Conflict(takenMessage(entry.domain)) : error;
    }
  });
  deps.jobs.wake();
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
function notLive(outcome: DomainOutcome, datasetId: string): { code: string; message: string } | undefined {
  if (!outcome) return { code: "conflict", message: replacedMeanwhile };
  if (outcome.state === "active") return undefined;
  if (outcome.state === "provisioning") return { code: "certificate_pending", message: stillRunning(outcome.domain, datasetId) };
  const code = outcome.state === "pending_dns" ? "dns_not_configured" : "certificate_failed";
  return { code, message: outcome.reason ?? `${outcome.domain} is not live.` };
}

export async function validate(deps: TrackingDomainDeps, accountId: string, datasetId: string, input: string): Promise<Schemas["CustomTrackingDomainValidationResponse"]> {
  const dataset = await access.dataset(deps, accountId, datasetId);
  const { ascii, checks } = await nameChecks(deps, dataset, input);
  const { cnameTarget } = deps.certificates.config;
  const base = { ctd: ascii ?? input, expectedTarget: cnameTarget };
  if (!ascii) return { ...base, valid: false, checks };
  if (checks.every((c) => c.ok)) {
    const dns = await deps.certificates.checkCname(ascii, cnameTarget);
    checks.push({ name: "cname", ok: dns.kind === "ok", message: dns.message });
  }
  return { ...base, valid: checks.every((c) => c.ok), checks, record: record(deps, ascii) };
}

export async function add(deps: TrackingDomainDeps, accountId: string, datasetId: string, input: string): Promise<Schemas["CustomTrackingDomainAddResponse"]> {
  const dataset = await access.dataset(deps, accountId, datasetId);
  const domain = await acceptableName(deps, dataset, input);
  const outcome = await waitForOutcome(deps, await register(deps, accountId, datasetId, domain));
  const problem = notLive(outcome, datasetId);
  return problem
    ? { responseCode: -1, responseMessage: problem.message }
    : { responseCode: 0, responseMessage: liveMessage(domain, outcome!.certificateNotAfter) };
}

export async function update(deps: TrackingDomainDeps, accountId: string, datasetId: string, input: string): Promise<void> {
  const dataset = await access.dataset(deps, accountId, datasetId);
  const domain = await acceptableName(deps, dataset, input);
  const existing = await entryOf(deps, accountId, datasetId);
  if (!existing) throw new NotFound(`Dataset ${datasetId} has no custom tracking domain; add one first.`);
  let id = existing.id;
  if (existing.domain === domain) await requeue(deps, id);
  else id = await replace(deps, id, { accountId, datasetId, domain });
  const problem = notLive(await waitForOutcome(deps, id), datasetId);
  if (problem) throw new Conflict(problem.message, problem.code);
}

export async function status(deps: TrackingDomainDeps, accountId: string, datasetId: string): Promise<Schemas["CustomTrackingDomainStatus"]> {
  await access.dataset(deps, accountId, datasetId);
  const entry = await deps.db.trackingDomain.findUnique({
    where: { accountId_datasetId: { accountId, datasetId } },
    include: { job: { select: { state: true, attempts: true, lastError: true } } },
  });
  if (!entry) throw new NotFound(`Dataset ${datasetId} has no custom tracking domain.`);
  return {
    datasetId,
    ctd: entry.domain,
    state: entry.state,
    message: stateMessage(entry),
    expectedTarget: deps.certificates.config.cnameTarget,
    record: record(deps, entry.domain),
    attempts: entry.job?.attempts ?? 0,
    ...(entry.certificateNotAfter ? { certificateExpiresAt: entry.certificateNotAfter.toISOString() } : {}),
    updatedAt: entry.updatedAt.toISOString(),
  };
}
