// Certificate provisioning as durable jobs: one row per tracking domain, claimed by a worker with
// a lease it renews while it works. Every write of a worker is conditional on its lease token,
// so a worker that lost its lease (it was too slow, the service restarted, or the domain was
// replaced) changes nothing; a job whose lease ran out is claimed again, by any process.
import { randomUUID } from "node:crypto";
import type { Db } from "../db/database.ts";
import { isUniqueViolation } from "../db/errors.ts";
import { type AccountKeyStore, type AcmeIssuer, acmeIssuer, CertificateError, type ProgressSink } from "../ctd/acme.ts";
import { NonPublicAddressError } from "../ctd/address-guard.ts";
import { resolveEncryptionKey, type TrackingDomainConfig } from "../ctd/config.ts";
import { type CnameCheck, cnameChecker } from "../ctd/dns.ts";
import { secretBox } from "../ctd/secret-box.ts";
import type { Logger } from "../logging.ts";

export interface ClaimedJob {
  id: bigint;
  domainId: bigint;
  domain: string;
  attempts: number;
  leaseToken: string;
  orderUrl: string | null;
  certificateKeyEnc: string | null;
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
}

export function certificateJobService(db: Db, { config, logger }: CertificateJobDeps) {
  const box = secretBox(() => resolveEncryptionKey(config, logger)); // asked for on first use
  const checkCname: CnameCheck = cnameChecker(config.dns);
  const listeners = new Set<() => void>();
  const kick = () => {
    for (const listener of listeners) listener();
  };
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

  const leaseEnd = () => new Date(Date.now() + config.jobs.leaseMs);
  const claimable = (now: Date) => ({
    state: { in: ["queued" as const, "running" as const] },
    runAfter: { lte: now },
    OR: [{ leaseUntil: null }, { leaseUntil: { lt: now } }],
  });

  /** A write of the lease holder; LeaseLostError when it holds the job no more. */
  async function asHolder(job: ClaimedJob, data: Parameters<Db["certificateJob"]["updateMany"]>[0]["data"], tx: Pick<Db, "certificateJob"> = db) {
    const { count } = await tx.certificateJob.updateMany({ where: { id: job.id, leaseToken: job.leaseToken }, data });
    if (count === 0) throw new LeaseLostError();
  }

  /** Ends the job and sets the domain's outcome, in one transaction. */
  async function finish(job: ClaimedJob, outcome: EntryOutcome, lastError: string | null): Promise<void> {
    await db.$transaction(async (tx) => {
      await asHolder(job, { state: "finished", leaseToken: null, leaseUntil: null, finishedAt: new Date(), lastError }, tx);
      await tx.trackingDomain.update({ where: { id: job.domainId }, data: outcome });
    });
    logger.info("certificate job finished", { jobId: String(job.id), domain: job.domain, attempt: job.attempts, outcome: outcome.state });
  }

  async function fail(job: ClaimedJob, message: string): Promise<void> {
    const sentence = /[.!?]$/.test(message) ? message : `${message}.`;
    const reason = `Certificate generation for ${job.domain} failed after ${job.attempts} attempts: ${sentence} Fix the cause, then call PUT /v1/management/ctd/update to try again.`;
    return finish(job, { state: "failed", reason }, message);
  }

  /** Another attempt after a delay, or the end when the attempts are used up. */
  async function retryOrFail(job: ClaimedJob, message: string): Promise<void> {
    if (job.attempts >= config.jobs.maxAttempts) return fail(job, message);
    await asHolder(job, {
      state: "queued",
      leaseToken: null,
      leaseUntil: null,
      runAfter: new Date(Date.now() + config.jobs.retryDelayMs),
      lastError: message,
    });
    logger.warn("certificate job will be retried", { jobId: String(job.id), domain: job.domain, attempt: job.attempts });
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

  async function attempt(job: ClaimedJob): Promise<void> {
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

  return {
    /** Called whenever a job becomes runnable: an idle worker of this process starts at once. */
    onQueued(listener: () => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    kick,

    /** Claims the next runnable job (queued, or running under an expired lease), counting an attempt. */
    async claimNext(workerId: string): Promise<ClaimedJob | undefined> {
      const now = new Date();
      const candidates = await db.certificateJob.findMany({ where: claimable(now), orderBy: { runAfter: "asc" }, take: 5, select: { id: true } });
      for (const { id } of candidates) {
        const leaseToken = `${workerId}/${randomUUID()}`;
        const { count } = await db.certificateJob.updateMany({
          where: { id, ...claimable(now) },
          data: { state: "running", leaseToken, leaseUntil: leaseEnd(), attempts: { increment: 1 }, startedAt: now },
        });
        if (count === 0) continue; // another worker was faster
        const job = await db.certificateJob.findUniqueOrThrow({ where: { id }, include: { domain: { select: { domain: true } } } });
        return { ...job, domain: job.domain.domain, leaseToken };
      }
      return undefined;
    },

    /** Extends the lease; false when the job is no longer this worker's. */
    async renew(job: ClaimedJob): Promise<boolean> {
      const { count } = await db.certificateJob.updateMany({
        where: { id: job.id, leaseToken: job.leaseToken },
        data: { leaseUntil: leaseEnd() },
      });
      return count === 1;
    },

    /** Gives the job back without counting the attempt (a graceful stop), for another worker to take at once. */
    async release(job: ClaimedJob): Promise<void> {
      await db.certificateJob.updateMany({
        where: { id: job.id, leaseToken: job.leaseToken },
        data: { state: "queued", leaseToken: null, leaseUntil: null, attempts: { decrement: 1 } },
      });
    },

    /** Runs one claimed attempt to its outcome; never throws. */
    async run(job: ClaimedJob): Promise<void> {
      logger.info("certificate job started", { jobId: String(job.id), domain: job.domain, attempt: job.attempts });
      try {
        // An attempt beyond the limit means the last one died with its worker.
        if (job.attempts > config.jobs.maxAttempts) {
          return await fail({ ...job, attempts: job.attempts - 1 }, "The certificate job was interrupted too often.");
        }
        await attempt(job);
      } catch (error) {
        if (error instanceof LeaseLostError) {
          logger.warn("certificate job lease lost; another worker or request took it over", { jobId: String(job.id), domain: job.domain });
          return;
        }
        logger.error("certificate job attempt failed", { jobId: String(job.id), domain: job.domain, attempt: job.attempts, error: String(error) });
        await retryOrFail(job, customerMessage(error)).catch((e: unknown) => {
          if (!(e instanceof LeaseLostError)) logger.error("certificate job could not record its failure", { jobId: String(job.id), error: String(e) });
        });
      }
    },

    /** The key authorization this service must answer for an HTTP-01 challenge of `host`. */
    async keyAuthorization(token: string, host: string): Promise<string | undefined> {
      const found = await db.certificateJob.findUnique({
        where: { challengeToken: token },
        select: { keyAuthorization: true, domain: { select: { domain: true } } },
      });
      return found && found.domain.domain === host.toLowerCase() ? (found.keyAuthorization ?? undefined) : undefined;
    },

    /**
     * Makes the domain's job runnable again, unless it is queued or running already (then the
     * caller joins it). One transaction, so a worker finishing meanwhile cannot be overwritten.
     */
    async requeue(domainId: bigint): Promise<void> {
      const restarted = await db.$transaction(async (tx) => {
        const { count } = await tx.certificateJob.updateMany({
          where: { domainId, state: "finished" },
          data: {
            state: "queued",
            attempts: 0,
            lastError: null,
            runAfter: new Date(),
            orderUrl: null,
            challengeToken: null,
            keyAuthorization: null,
            certificateKeyEnc: null,
            startedAt: null,
            finishedAt: null,
          },
        });
        if (count) await tx.trackingDomain.update({ where: { id: domainId }, data: { state: "provisioning", reason: null } });
        return count > 0;
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
        await new Promise((resolve) => setTimeout(resolve, Math.min(config.jobs.pollMs, 250, Math.max(deadline - Date.now(), 0))));
      }
    },
  };
}

export type CertificateJobService = ReturnType<typeof certificateJobService>;
