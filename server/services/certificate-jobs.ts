// Certificate provisioning runs on the durable job queue (server/jobs/queue.ts): each attempt is
// a run of a job of kind `certificate` (payload {domainId, generation}); the queue's lease, retries
// and dead state replace a loop of its own. The CertificateJob row is the domain's progress (state,
// attempts, the ACME order and challenge, the key) and survives restarts. Every write of an
// attempt locks the queue job's row and is made only while that job is still running this very
// attempt, so a worker that lost its lease (it was too slow, its process was killed and the job
// taken over, or the domain was replaced) changes nothing.
import { Prisma } from "../../generated/prisma/client.ts";
import type { Db } from "../db/database.ts";
import { isUniqueViolation } from "../db/errors.ts";
import { type AccountKeyStore, type AcmeIssuer, acmeIssuer, CertificateError, type ProgressSink } from "../ctd/acme.ts";
import { NonPublicAddressError } from "../security/address-guard.ts";
import type { TrackingDomainConfig } from "../config.ts";
import { type CnameCheck, cnameChecker } from "../ctd/dns.ts";
import { resolveEncryptionKey, secretBox } from "../security/secret-box.ts";
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

export interface CertificateJobDeps {
  config: TrackingDomainConfig;
  logger: Logger;
  /** The process's job queue: the `certificate` kind is registered on it here. */
  queue: JobQueue;
  /** How often a waiting request looks at the outcome (the queue's JOB_POLL_MS, at most 250 ms). */
  pollMs: number;
}

type Tx = Prisma.TransactionClient;

/** The queue job that runs `generation` of a domain's certificate work (a repeated add joins it). */
export async function enqueueCertificateJob(queue: JobQueue, tx: Tx | Db, domainId: bigint, generation: number): Promise<void> {
  const payload: CertificatePayload = { domainId: String(domainId), generation };
  await queue.enqueue(tx, { kind: CERTIFICATE_JOB_KIND, payload, dedupeKey: certificateDedupeKey(domainId, generation) });
}

export const certificateDedupeKey = (domainId: bigint, generation: number) => `${CERTIFICATE_JOB_KIND}:${domainId}:${generation}`;

// Why long: a service factory whose methods share its dependencies; issue 37 item 4 makes it a module with explicit dependencies.
export function certificateJobService(db: Db, { config, logger, queue, pollMs }: CertificateJobDeps) {
  const box = secretBox(() => resolveEncryptionKey(config, logger)); // asked for on first use
  const checkCname: CnameCheck = cnameChecker(config.dns);
  const kick = () => queue.wake();
  const accountContext = (directoryUrl: string) => `acme-account:${directoryUrl}`;

  const accountKeys: AccountKeyStore = {
    async load(directoryUrl) {
      const found = await db.acmeAccount.findUnique({ where: { directoryUrl } });
      return found ? box.open(found.keyEnc, accountContext(directoryUrl)) : undefined;
    },
    async save(directoryUrl, privateKeyPem) {
      try {
        await db.acmeAccount.create({ data: { directoryUrl, keyEnc: box.seal(privateKeyPem, accountContext(directoryUrl)) } });
        return privateKeyPem;
      } catch (error) {
        // Another process registered first: use its key.
        if (!isUniqueViolation(error)) throw error;
        return (await accountKeys.load(directoryUrl))!;
      }
    },
  };
  let issuer: AcmeIssuer | undefined;
  const acme = () => (issuer ??= acmeIssuer({ acme: config.acme, allowPrivateAddresses: config.allowPrivateAddresses }, accountKeys));

  /**
   * A write of the attempt in hand, in a transaction that first locks the queue job's row while it
   * still runs this attempt (a claim by another worker waits for it, and then counts another
   * attempt); LeaseLostError when the job is no longer this attempt's.
   */
  async function asHolder(job: ClaimedJob, data: Prisma.CertificateJobUpdateInput, tx?: Tx): Promise<void> {
    const write = async (t: Tx) => {
      if (!(await queue.holdsAttempt(t, job.queueJobId, job.attempts))) throw new LeaseLostError();
      await t.certificateJob.update({ where: { id: job.id }, data });
    };
    if (tx) await write(tx);
    else await db.$transaction(write);
  }

  /** Ends the job and sets the domain's outcome, in one transaction. */
  async function finish(job: ClaimedJob, outcome: EntryOutcome, lastError: string | null): Promise<void> {
    await db.$transaction(async (tx) => {
      await asHolder(job, { state: "finished", finishedAt: new Date(), lastError }, tx);
      await tx.trackingDomain.update({ where: { id: job.domainId }, data: outcome });
    });
    logger.info("certificate job finished", { jobId: String(job.id), domain: job.domain, attempt: job.attempts, outcome: outcome.state });
  }

  async function fail(job: ClaimedJob, message: string): Promise<void> {
    const sentence = /[.!?]$/.test(message) ? message : `${message}.`;
    const reason = `Certificate generation for ${job.domain} failed after ${job.attempts} attempts: ${sentence} Fix the cause, then call PUT /v1/management/ctd/update to try again.`;
    return finish(job, { state: "failed", reason }, message);
  }

  /** Another attempt after a delay (the queue's retry: throws RetryCertificate), or the end when the attempts are used up. */
  async function retryOrFail(job: ClaimedJob, message: string): Promise<void> {
    if (job.attempts >= config.jobs.maxAttempts) return fail(job, message);
    await asHolder(job, { state: "queued", lastError: message });
    logger.warn("certificate job will be retried", { jobId: String(job.id), domain: job.domain, attempt: job.attempts });
    throw new RetryCertificate(message);
  }

  function progressSink(job: ClaimedJob): ProgressSink {
    return {
      orderCreated: async (orderUrl) => {
        await asHolder(job, { orderUrl, challengeToken: null, keyAuthorization: null, certificateKeyEnc: null });
        logger.info("certificate order created", { jobId: String(job.id), domain: job.domain, attempt: job.attempts, resumable: !!job.orderUrl });
      },
      challengePublished: (challengeToken, keyAuthorization) => asHolder(job, { challengeToken, keyAuthorization }),
      keyChosen: (pem) => asHolder(job, { certificateKeyEnc: box.seal(pem, job.domain) }),
    };
  }

  async function provision(job: ClaimedJob): Promise<void> {
    const dns = await checkCname(job.domain, config.cnameTarget);
    if (dns.kind === "needs_record") {
      const reason = `${dns.message} Then call PUT /v1/management/ctd/update to continue.`;
      return finish(job, { state: "pending_dns", reason }, dns.message);
    }
    if (dns.kind === "lookup_failed") return retryOrFail(job, dns.message);
    const previousKey = job.certificateKeyEnc ? box.open(job.certificateKeyEnc, job.domain) : null;
    const issued = await acme().issue(job.domain, { orderUrl: job.orderUrl, privateKeyPem: previousKey }, progressSink(job));
    await finish(
      job,
      {
        state: "active",
        reason: null,
        certificatePem: issued.certificatePem,
        certificateKeyEnc: box.seal(issued.privateKeyPem, job.domain),
        certificateNotAfter: issued.notAfter,
      },
      null,
    );
  }

  /** One attempt of the queue job: the domain's progress row, when this generation is still to do. */
  async function begin(queueJobId: bigint, payload: CertificatePayload, attempt: number): Promise<ClaimedJob | undefined> {
    const found = await db.certificateJob.findUnique({ where: { domainId: BigInt(payload.domainId) }, include: { domain: { select: { domain: true } } } });
    // the domain was deleted or replaced, or a newer generation took over: nothing left to do
    if (!found || found.generation !== payload.generation || found.state === "finished") return undefined;
    const job: ClaimedJob = { ...found, domain: found.domain.domain, attempts: attempt, queueJobId };
    await asHolder(job, { state: "running", attempts: attempt, startedAt: new Date() });
    return job;
  }

  /** Runs one attempt to its outcome; throws RetryCertificate for the queue to try again later. */
  async function run(queueJobId: bigint, payload: CertificatePayload, attempt: number): Promise<void> {
    let job: ClaimedJob | undefined;
    try {
      job = await begin(queueJobId, payload, attempt);
      if (!job) return;
      logger.info("certificate job started", { jobId: String(job.id), domain: job.domain, attempt });
      await provision(job);
    } catch (error) {
      if (error instanceof RetryCertificate) throw error;
      if (error instanceof LeaseLostError) {
        logger.warn("certificate job lease lost; another worker or request took it over", { jobId: String(job?.id ?? ""), domain: job?.domain });
        return;
      }
      if (!job) throw error; // the progress row could not be read: the queue retries
      logger.error("certificate job attempt failed", { jobId: String(job.id), domain: job.domain, attempt, error: String(error) });
      try {
        await retryOrFail(job, customerMessage(error));
      } catch (e) {
        if (e instanceof RetryCertificate || !(e instanceof LeaseLostError)) throw e;
      }
    }
  }

  /** The queue gave up on the job without a last run (its last attempt died with its process). */
  async function settleDead(payload: CertificatePayload): Promise<void> {
    const domainId = BigInt(payload.domainId);
    const message = "The certificate job was interrupted too often.";
    await db.$transaction(async (tx) => {
      const { count } = await tx.certificateJob.updateMany({
        where: { domainId, generation: payload.generation, state: { not: "finished" } },
        data: { state: "finished", finishedAt: new Date(), lastError: message, attempts: config.jobs.maxAttempts },
      });
      if (!count) return;
      const entry = await tx.trackingDomain.findUniqueOrThrow({ where: { id: domainId }, select: { domain: true } });
      const reason = `Certificate generation for ${entry.domain} failed after ${config.jobs.maxAttempts} attempts: ${message} Fix the cause, then call PUT /v1/management/ctd/update to try again.`;
      await tx.trackingDomain.update({ where: { id: domainId }, data: { state: "failed", reason } });
    });
  }

  queue.register(CERTIFICATE_JOB_KIND, (job) => run(job.id, job.payload as CertificatePayload, job.attempt), {
    maxAttempts: config.jobs.maxAttempts,
    backoffMs: () => config.jobs.retryDelayMs,
    leaseMs: config.jobs.leaseMs,
    concurrency: 1,
    onDead: (job) => settleDead(job.payload as CertificatePayload),
  });

  return {
    kick,

    /** The key authorization this service must answer for an HTTP-01 challenge of `host`. */
    async keyAuthorization(token: string, host: string): Promise<string | undefined> {
      const found = await db.certificateJob.findUnique({
        where: { challengeToken: token },
        select: { keyAuthorization: true, domain: { select: { domain: true } } },
      });
      return found && found.domain.domain === host.toLowerCase() ? (found.keyAuthorization ?? undefined) : undefined;
    },

    /** The first queue job of a new domain entry, in the caller's transaction (then `kick` after commit). */
    enqueueFirst: (tx: Tx, domainId: bigint) => enqueueCertificateJob(queue, tx, domainId, 0),

    /**
     * Makes the domain's work runnable again (a new generation with its own queue job), unless it
     * is queued or running already on a live queue job (then the caller joins it). One transaction, so a worker
     * finishing meanwhile cannot be overwritten, and the job exists iff the restart commits.
     */
    async requeue(domainId: bigint): Promise<void> {
      const restarted = await db.$transaction(async (tx) => {
        const current = await tx.certificateJob.findUnique({ where: { domainId }, select: { state: true, generation: true } });
        if (!current) return false;
        if (current.state !== "finished") {
          // joined, unless its queue job ended without settling it (onDead could not write): then it restarts
          const queued = await queue.stateOf(tx, certificateDedupeKey(domainId, current.generation));
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
        await enqueueCertificateJob(queue, tx, domainId, generation);
        await tx.trackingDomain.update({ where: { id: domainId }, data: { state: "provisioning", reason: null } });
        return true;
      });
      if (restarted) kick();
    },

    /** The domain's state once it leaves `provisioning`, or as it is when `limitMs` has passed; undefined when it was deleted. */
    async waitForOutcome(domainId: bigint, limitMs = config.addWaitMs) {
      const deadline = Date.now() + limitMs;
      for (;;) {
        const entry = await db.trackingDomain.findUnique({
          where: { id: domainId },
          select: { state: true, reason: true, domain: true, certificateNotAfter: true },
        });
        if (!entry || entry.state !== "provisioning" || Date.now() >= deadline) return entry ?? undefined;
        await new Promise((resolve) => setTimeout(resolve, Math.min(pollMs, 250, Math.max(deadline - Date.now(), 0))));
      }
    },
  };
}

export type CertificateJobService = ReturnType<typeof certificateJobService>;
