// Certificate provisioning runs on the durable job queue (server/jobs/queue.ts): each attempt is
// a run of a job of kind `certificate` (payload {domainId, generation}); the queue's lease, retries
// and dead state replace a loop of its own. The CertificateJob row is the domain's progress (state,
// attempts, the ACME order and challenge, the key) and survives restarts. Every write of an
// attempt locks the queue job's row and is made only while that job is still running this very
// attempt, so a worker that lost its lease (it was too slow, its process was killed and the job
// taken over, or the domain was replaced) changes nothing. This module is the only writer of
// TrackingDomain and CertificateJob: custom-tracking-domains.ts creates and deletes entries through it.
import { Prisma } from "../../generated/prisma/client.ts";
import type { Db } from "../db/database.ts";
import { isUniqueViolation } from "../db/errors.ts";
import { type AccountKeyStore, type AcmeIssuer, acmeIssuer, CertificateError, type ProgressSink } from "../ctd/acme.ts";
import { NonPublicAddressError } from "../security/address-guard.ts";
import type { TrackingDomainConfig } from "../config.ts";
import { type CnameCheck, cnameChecker } from "../ctd/dns.ts";
import { resolveEncryptionKey, type SecretBox, secretBox } from "../security/secret-box.ts";
import type { JobQueue } from "../jobs/queue.ts";
import type { Logger } from "../logging.ts";

/** One attempt in hand: the domain's progress row and the queue job (id, attempt) that holds it. */
export interface ClaimedJob {
  id: bigint;
  domainId: bigint;
  domain: string;
  attempts: number;
  /** The queue job and the attempt this run is: writes are conditional on them. */
  queueJobId: bigint;
  orderUrl: string | null;
  certificateKeyEnc: string | null;
}

/** The queue job kind of certificate provisioning; its payload is CertificatePayload. */
export const CERTIFICATE_JOB_KIND = "certificate";
interface CertificatePayload {
  domainId: string;
  generation: number;
}

/** The worker no longer holds the job: stop working on it. */
export class RetryCertificate extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RetryCertificate";
  }
}

/** The worker no longer holds the job: stop working on it. */
export class LeaseLostError extends Error {
  constructor() {
    super("the job's lease was lost");
  }
}

type EntryOutcome = { state: "active" | "pending_dns" | "failed"; reason: string | null } & Partial<{
  certificatePem: string;
  certificateKeyEnc: string;
  certificateNotAfter: Date;
}>;

/** What a customer may read about a failure: the CA's own words, or a generic line (details go to the log). */
function customerMessage(error: unknown): string {
  if (error instanceof CertificateError) return error.message;
  if (error instanceof NonPublicAddressError) return "The certificate authority's address is not allowed; our operators have been alerted.";
  // acme-client reports the CA's problem documents as plain Errors carrying the CA's detail.
  if (error instanceof Error && error.constructor === Error && !(error as { code?: string }).code) {
    return `The certificate authority refused the request: ${error.message}`;
  }
  return "The certificate authority could not be reached or answered unexpectedly.";
}

/**
 * What certificate work keeps for the process, made once in createServices: the settings, the
 * sealing box of keys (its key asked for on first use), the DNS check and the ACME client (made on
 * first use: `issuer`).
 */
export interface CertificateContext {
  config: TrackingDomainConfig;
  logger: Logger;
  /** How often a waiting request looks at the outcome (the queue's JOB_POLL_MS, at most 250 ms). */
  pollMs: number;
  box: SecretBox;
  checkCname: CnameCheck;
  issuer?: AcmeIssuer;
}

export function certificateContext(config: TrackingDomainConfig, logger: Logger, pollMs: number): CertificateContext {
  return { config, logger, pollMs, box: secretBox(() => resolveEncryptionKey(config, logger)), checkCname: cnameChecker(config.dns) };
}

/** This module writes TrackingDomain and CertificateJob; `jobs` is the process's queue (the `certificate` kind). */
export interface CertificateJobDeps {
  db: Db;
  jobs: JobQueue;
  certificates: CertificateContext;
}

type Tx = Prisma.TransactionClient;

/** The queue job that runs `generation` of a domain's certificate work (a repeated add joins it). */
export async function enqueueCertificateJob(queue: JobQueue, tx: Tx | Db, domainId: bigint, generation: number): Promise<void> {
  const payload: CertificatePayload = { domainId: String(domainId), generation };
  await queue.enqueue(tx, { kind: CERTIFICATE_JOB_KIND, payload, dedupeKey: certificateDedupeKey(domainId, generation) });
}

export const certificateDedupeKey = (domainId: bigint, generation: number) => `${CERTIFICATE_JOB_KIND}:${domainId}:${generation}`;

const accountContext = (directoryUrl: string) => `acme-account:${directoryUrl}`;

/** ACME account keys, sealed in AcmeAccount: the first process to register a directory's account wins. */
function accountKeyStore(db: Db, box: SecretBox): AccountKeyStore {
  const load = async (directoryUrl: string) => {
    const found = await db.acmeAccount.findUnique({ where: { directoryUrl } });
    return found ? box.open(found.keyEnc, accountContext(directoryUrl)) : undefined;
  };
  const save = async (directoryUrl: string, privateKeyPem: string) => {
    try {
      await db.acmeAccount.create({ data: { directoryUrl, keyEnc: box.seal(privateKeyPem, accountContext(directoryUrl)) } });
      return privateKeyPem;
    } catch (error) {
      // Another process registered first: use its key.
      if (!isUniqueViolation(error)) throw error;
      return (await load(directoryUrl))!;
    }
  };
  return { load, save };
}

function acme({ db, certificates }: Pick<CertificateJobDeps, "db" | "certificates">): AcmeIssuer {
  const { config } = certificates;
  return (certificates.issuer ??= acmeIssuer({ acme: config.acme, allowPrivateAddresses: config.allowPrivateAddresses }, accountKeyStore(db, certificates.box)));
}

/**
 * A write of the attempt in hand, in a transaction that first locks the queue job's row while it
 * still runs this attempt (a claim by another worker waits for it, and then counts another
 * attempt); LeaseLostError when the job is no longer this attempt's.
 */
async function asHolder({ db, jobs }: CertificateJobDeps, job: ClaimedJob, data: Prisma.CertificateJobUpdateInput, tx?: Tx): Promise<void> {
  const write = async (t: Tx) => {
    if (!(await jobs.holdsAttempt(t, job.queueJobId, job.attempts))) throw new LeaseLostError();
    await t.certificateJob.update({ where: { id: job.id }, data });
  };
  if (tx) await write(tx);
  else await db.$transaction(write);
}

/** Ends the job and sets the domain's outcome, in one transaction. */
async function finish(deps: CertificateJobDeps, job: ClaimedJob, outcome: EntryOutcome, lastError: string | null): Promise<void> {
  await deps.db.$transaction(async (tx) => {
    await asHolder(deps, job, { state: "finished", finishedAt: new Date(), lastError }, tx);
    await tx.trackingDomain.update({ where: { id: job.domainId }, data: outcome });
  });
  deps.certificates.logger.info("certificate job finished", { jobId: String(job.id), domain: job.domain, attempt: job.attempts, outcome: outcome.state });
}

const failedReason = (domain: string, attempts: number, sentence: string) =>
  `Certificate generation for ${domain} failed after ${attempts} attempts: ${sentence} Fix the cause, then call PUT /v1/management/ctd/update to try again.`;

async function fail(deps: CertificateJobDeps, job: ClaimedJob, message: string): Promise<void> {
  const sentence = /[.!?]$/.test(message) ? message : `${message}.`;
  return finish(deps, job, { state: "failed", reason: failedReason(job.domain, job.attempts, sentence) }, message);
}

/** Another attempt after a delay (the queue's retry: throws RetryCertificate), or the end when the attempts are used up. */
async function retryOrFail(deps: CertificateJobDeps, job: ClaimedJob, message: string): Promise<void> {
  if (job.attempts >= deps.certificates.config.jobs.maxAttempts) return fail(deps, job, message);
  await asHolder(deps, job, { state: "queued", lastError: message });
  deps.certificates.logger.warn("certificate job will be retried", { jobId: String(job.id), domain: job.domain, attempt: job.attempts });
  throw new RetryCertificate(message);
}

function progressSink(deps: CertificateJobDeps, job: ClaimedJob): ProgressSink {
  return {
    orderCreated: async (orderUrl) => {
      await asHolder(deps, job, { orderUrl, challengeToken: null, keyAuthorization: null, certificateKeyEnc: null });
      deps.certificates.logger.info("certificate order created", { jobId: String(job.id), domain: job.domain, attempt: job.attempts, resumable: !!job.orderUrl });
    },
    challengePublished: (challengeToken, keyAuthorization) => asHolder(deps, job, { challengeToken, keyAuthorization }),
    keyChosen: (pem) => asHolder(deps, job, { certificateKeyEnc: deps.certificates.box.seal(pem, job.domain) }),
  };
}

async function provision(deps: CertificateJobDeps, job: ClaimedJob): Promise<void> {
  const { config, box, checkCname } = deps.certificates;
  const dns = await checkCname(job.domain, config.cnameTarget);
  if (dns.kind === "needs_record") {
    const reason = `${dns.message} Then call PUT /v1/management/ctd/update to continue.`;
    return finish(deps, job, { state: "pending_dns", reason }, dns.message);
  }
  if (dns.kind === "lookup_failed") return retryOrFail(deps, job, dns.message);
  const previousKey = job.certificateKeyEnc ? box.open(job.certificateKeyEnc, job.domain) : null;
  const issued = await acme(deps).issue(job.domain, { orderUrl: job.orderUrl, privateKeyPem: previousKey }, progressSink(deps, job));
  const outcome: EntryOutcome = {
    state: "active",
    reason: null,
    certificatePem: issued.certificatePem,
    certificateKeyEnc: box.seal(issued.privateKeyPem, job.domain),
    certificateNotAfter: issued.notAfter,
  };
  await finish(deps, job, outcome, null);
}

/** One attempt of the queue job: the domain's progress row, when this generation is still to do. */
async function begin(deps: CertificateJobDeps, queueJobId: bigint, payload: CertificatePayload, attempt: number): Promise<ClaimedJob | undefined> {
  const found = await deps.db.certificateJob.findUnique({ where: { domainId: BigInt(payload.domainId) }, include: { domain: { select: { domain: true } } } });
  // the domain was deleted or replaced, or a newer generation took over: nothing left to do
  if (!found || found.generation !== payload.generation || found.state === "finished") return undefined;
  const job: ClaimedJob = { ...found, domain: found.domain.domain, attempts: attempt, queueJobId };
  await asHolder(deps, job, { state: "running", attempts: attempt, startedAt: new Date() });
  return job;
}

/** Runs one attempt to its outcome; throws RetryCertificate for the queue to try again later. */
async function run(deps: CertificateJobDeps, queueJobId: bigint, payload: CertificatePayload, attempt: number): Promise<void> {
  const { logger } = deps.certificates;
  let job: ClaimedJob | undefined;
  try {
    job = await begin(deps, queueJobId, payload, attempt);
    if (!job) return;
    logger.info("certificate job started", { jobId: String(job.id), domain: job.domain, attempt });
    await provision(deps, job);
  } catch (error) {
    if (error instanceof RetryCertificate) throw error;
    if (error instanceof LeaseLostError) {
      logger.warn("certificate job lease lost; another worker or request took it over", { jobId: String(job?.id ?? ""), domain: job?.domain });
      return;
    }
    if (!job) throw error; // the progress row could not be read: the queue retries
    logger.error("certificate job attempt failed", { jobId: String(job.id), domain: job.domain, attempt, error: String(error) });
    try {
      await retryOrFail(deps, job, customerMessage(error));
    } catch (e) {
      if (e instanceof RetryCertificate || !(e instanceof LeaseLostError)) throw e;
    }
  }
}

/** The queue gave up on the job without a last run (its last attempt died with its process). */
async function settleDead({ db, certificates }: CertificateJobDeps, payload: CertificatePayload): Promise<void> {
  const domainId = BigInt(payload.domainId);
  const message = "The certificate job was interrupted too often.";
  const { maxAttempts } = certificates.config.jobs;
  await db.$transaction(async (tx) => {
    const { count } = await tx.certificateJob.updateMany({
      where: { domainId, generation: payload.generation, state: { not: "finished" } },
      data: { state: "finished", finishedAt: new Date(), lastError: message, attempts: maxAttempts },
    });
    if (!count) return;
    const entry = await tx.trackingDomain.findUniqueOrThrow({ where: { id: domainId }, select: { domain: true } });
    await tx.trackingDomain.update({ where: { id: domainId }, data: { state: "failed", reason: failedReason(entry.domain, maxAttempts, message) } });
  });
}

/** Registers the `certificate` kind on the process's queue (createServices, once per queue). */
export function registerCertificateJobs(deps: CertificateJobDeps): void {
  const { config } = deps.certificates;
  deps.jobs.register(CERTIFICATE_JOB_KIND, (job) => run(deps, job.id, job.payload as CertificatePayload, job.attempt), {
    maxAttempts: config.jobs.maxAttempts,
    backoffMs: () => config.jobs.retryDelayMs,
    leaseMs: config.jobs.leaseMs,
    concurrency: 1,
    onDead: (job) => settleDead(deps, job.payload as CertificatePayload),
  });
}

/** The key authorization this service must answer for an HTTP-01 challenge of `host`. */
export async function keyAuthorization({ db }: Pick<CertificateJobDeps, "db">, token: string, host: string): Promise<string | undefined> {
  const found = await db.certificateJob.findUnique({
    where: { challengeToken: token },
    select: { keyAuthorization: true, domain: { select: { domain: true } } },
  });
  return found && found.domain.domain === host.toLowerCase() ? (found.keyAuthorization ?? undefined) : undefined;
}

/**
 * A new domain entry with its progress row and first queue job, in the caller's transaction (then
 * `deps.jobs.wake()` after commit); P2002 when the domain or the dataset's slot is taken.
 */
export async function createDomainEntry({ jobs }: Pick<CertificateJobDeps, "jobs">, tx: Tx, entry: { accountId: string; datasetId: string; domain: string }): Promise<bigint> {
  const created = await tx.trackingDomain.create({ data: { ...entry, state: "provisioning", job: { create: {} } }, select: { id: true } });
  await enqueueCertificateJob(jobs, tx, created.id, 0);
  return created.id;
}

/** Deletes a domain entry (its job and certificate with it); false when it was gone already. */
export async function deleteDomainEntry(tx: Tx, entryId: bigint): Promise<boolean> {
  const { count } = await tx.trackingDomain.deleteMany({ where: { id: entryId } });
  return count > 0;
}

/**
 * Makes the domain's work runnable again (a new generation with its own queue job), unless it
 * is queued or running already on a live queue job (then the caller joins it). One transaction, so a worker
 * finishing meanwhile cannot be overwritten, and the job exists iff the restart commits.
 */
export async function requeue({ db, jobs }: Pick<CertificateJobDeps, "db" | "jobs">, domainId: bigint): Promise<void> {
  const restarted = await db.$transaction(async (tx) => {
    const current = await tx.certificateJob.findUnique({ where: { domainId }, select: { state: true, generation: true } });
    if (!current) return false;
    if (current.state !== "finished") {
      // joined, unless its queue job ended without settling it (onDead could not write): then it restarts
      const queued = await jobs.stateOf(tx, certificateDedupeKey(domainId, current.generation));
      if (queued === "queued" || queued === "running") return false;
    }
    // conditional on the generation read: of two concurrent restarts one wins, the other joins
    const { count } = await tx.certificateJob.updateMany({
      where: { domainId, generation: current.generation, state: current.state },
      data: {
        state: "queued",
        attempts: 0,
        lastError: null,
        generation: { increment: 1 },
        orderUrl: null,
        challengeToken: null,
        keyAuthorization: null,
        certificateKeyEnc: null,
        startedAt: null,
        finishedAt: null,
      },
    });
    if (!count) return false;
    const { generation } = await tx.certificateJob.findUniqueOrThrow({ where: { domainId }, select: { generation: true } });
    await enqueueCertificateJob(jobs, tx, domainId, generation);
    await tx.trackingDomain.update({ where: { id: domainId }, data: { state: "provisioning", reason: null } });
    return true;
  });
  if (restarted) jobs.wake();
}

export type DomainOutcome = Awaited<ReturnType<typeof waitForOutcome>>;

/** The domain's state once it leaves `provisioning`, or as it is when `limitMs` has passed; undefined when it was deleted. */
export async function waitForOutcome({ db, certificates }: Pick<CertificateJobDeps, "db" | "certificates">, domainId: bigint, limitMs = certificates.config.addWaitMs) {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const entry = await db.trackingDomain.findUnique({
      where: { id: domainId },
      select: { state: true, reason: true, domain: true, certificateNotAfter: true },
    });
    if (!entry || entry.state !== "provisioning" || Date.now() >= deadline) return entry ?? undefined;
    await new Promise((resolve) => setTimeout(resolve, Math.min(certificates.pollMs, 250, Math.max(deadline - Date.now(), 0))));
  }
}
