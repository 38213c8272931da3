// The `webhook` job: one attempt of one delivery. The queue runs it on the Standard Webhooks
// schedule; this records the attempt and tells the queue what comes next: nothing (2xx), GiveUp
// (410, the endpoint disabled, or the delivery settled), RetryAt (a Retry-After), or an error
// (the next attempt on the schedule). A process killed after the POST and before the record is
// the one case a receiver sees a delivery twice: always with the same webhook-id.
import type { Db } from "../db/database.ts";
import type { SecretBox } from "../security/secret-box.ts";
import type { Logger } from "../logging.ts";
import type { WebhookConfig } from "../config.ts";
import { createSender, type AttemptOutcome, type Sender } from "./delivery.ts";
import { countFailedAttempt, disableEndpoint, endFailingRun, failingSinceOf, failPendingDelivery, markDelivered, recordAttempt, WEBHOOK_JOB } from "./webhook-store.ts";
import { GiveUp, type JobQueue, RetryAt } from "../jobs/queue.ts";
import { MAIL_JOB } from "./mail.ts";

export const secretContext = (endpointId: string) => `webhook-endpoint:${endpointId}`;

/** What the service does when it disables an endpoint that kept failing (e-mail its admins). */
export type EndpointDisabledHook = (
  tx: Parameters<Parameters<Db["$transaction"]>[0]>[0],
  endpoint: { accountId: string; endpointId: string; url: string; failingSince: Date },
) => Promise<void>;

export interface WebhookWorkerOptions {
  config: WebhookConfig;
  secrets: SecretBox;
  logger: Logger;
  now?: () => Date;
  /** Called in the transaction that disables a failing endpoint; see notifyAdminsOfDisabledEndpoint. */
  onEndpointDisabled?: EndpointDisabledHook;
  /** Tests only: another sender. */
  sender?: Sender;
}

/** Registers the `webhook` job kind on the queue. */
// Why long: one job handler: a delivery's whole attempt (checks, send, record, retry or give up) in its order.
export function registerWebhookJobs(db: Db, jobs: JobQueue, options: WebhookWorkerOptions): void {
  const { config, secrets, logger, now = () => new Date(), onEndpointDisabled } = options;
  const send = options.sender ?? createSender({ timeoutMs: config.timeoutMs, allowPrivateAddresses: config.allowPrivateAddresses, now });
  const maxAttempts = config.retryScheduleMs.length + 1;

  const attemptOf = (deliverySeq: bigint, at: Date, outcome: AttemptOutcome) => ({ deliverySeq, at, statusCode: outcome.statusCode, durationMs: outcome.durationMs, errorClass: outcome.errorClass });

  jobs.register(
    WEBHOOK_JOB,
    async (job) => {
      const { deliveryId } = job.payload as { deliveryId: string };
      const delivery = await db.webhookDelivery.findUnique({ where: { id: deliveryId }, include: { endpoint: true } });
      // deleted with its endpoint, or settled by an earlier run of this job
      if (!delivery || delivery.state !== "pending") return;
      const endpoint = delivery.endpoint;
      if (!endpoint.enabled) {
        await failPendingDelivery(db, { seq: delivery.seq });
        return;
      }
      if (config.requireHttps && !endpoint.url.startsWith("https:")) {
        await failPendingDelivery(db, { seq: delivery.seq });
        throw new GiveUp("endpoint URL is not https");
      }
      const at = now();
      const outcome = await send({ url: endpoint.url, id: delivery.id, secret: secrets.open(endpoint.secretSealed, secretContext(endpoint.id)), body: delivery.payload });
      const attempt = attemptOf(delivery.seq, at, outcome);
      const fields = { deliveryId: delivery.id, endpointId: endpoint.id, attempt: job.attempt, statusCode: outcome.statusCode, errorClass: outcome.errorClass, durationMs: outcome.durationMs };

      if (outcome.ok) {
        await db.$transaction([
          recordAttempt(db, attempt),
          markDelivered(db, delivery.seq, now()),
          endFailingRun(db, endpoint.id),
        ]);
        logger.info("webhook delivered", fields);
        return;
      }

      const gone = outcome.statusCode === 410;
      const last = job.attempt >= maxAttempts;
      // One transaction: the attempt, the delivery's state and the endpoint's failure run; and,
      // when the run reaches the limit, the endpoint disabled (once: a conditional update) with
      // its admins told in the same transaction.
      const disabled = await db.$transaction(async (tx) => {
        await recordAttempt(tx, attempt);
        const failingSince = await failingSinceOf(tx, endpoint.id, at);
        const failingTooLong = at.getTime() - failingSince.getTime() >= config.disableAfterMs;
        let disabledNow: "gone" | "failing" | undefined;
        if (gone || failingTooLong) {
          const reason = gone ? "gone" : "failing";
          if (await disableEndpoint(tx, endpoint.id, reason, at)) {
            disabledNow = reason;
            if (reason === "failing") await onEndpointDisabled?.(tx, { accountId: endpoint.accountId, endpointId: endpoint.id, url: endpoint.url, failingSince });
          }
        }
        const settled = gone || failingTooLong || last;
        await countFailedAttempt(tx, delivery.seq, settled);
        return { settled, disabledNow, failingSince };
      });
      if (disabled.disabledNow) logger.warn("webhook endpoint disabled", { endpointId: endpoint.id, reason: disabled.disabledNow });
      logger.info("webhook attempt failed", { ...fields, final: disabled.settled });
      if (disabled.settled) throw new GiveUp(`webhook delivery failed: ${outcome.errorClass}`);
      if (outcome.retryAt) {
        const latest = at.getTime() + config.maxRetryAfterMs;
        throw new RetryAt(new Date(Math.min(outcome.retryAt.getTime(), latest)), `webhook answered ${outcome.statusCode} with Retry-After`);
      }
      throw new Error(`webhook attempt failed: ${outcome.errorClass}${outcome.statusCode ? ` ${outcome.statusCode}` : ""}`);
    },
    {
      maxAttempts,
      backoffMs: (attempt) => config.retryScheduleMs[Math.min(attempt, config.retryScheduleMs.length) - 1] ?? 0,
      jitter: config.jitter,
      // renewed while the attempt runs; after a crash the delivery is retried this soon
      leaseMs: config.timeoutMs + 5_000,
      concurrency: 8,
      // a delivery whose job died without a last run of the handler is failed, not pending forever
      onDead: async ({ payload }) => {
        const { deliveryId } = payload as { deliveryId: string };
        await failPendingDelivery(db, { id: deliveryId });
      },
    },
  );
}

/**
 * The EndpointDisabledHook of the service: one e-mail (a `mail` job, server/notify/mail.ts) to
 * each admin of the account, in the transaction that disabled the endpoint. Names the endpoint
 * and its URL without query (which may hold a token); never the secret.
 */
export function notifyAdminsOfDisabledEndpoint(jobs: Pick<JobQueue, "enqueue">): EndpointDisabledHook {
  return async (tx, { accountId, endpointId, url, failingSince }) => {
    const admins = await tx.membership.findMany({ where: { accountId, role: "admin" }, select: { userId: true, user: { select: { email: true } } } });
    const parsed = new URL(url);
    const shown = `${parsed.origin}${parsed.pathname}`;
    const since = failingSince.toISOString();
    for (const admin of admins) {
      await jobs.enqueue(tx, {
        kind: MAIL_JOB,
        dedupeKey: `webhook-disabled:${endpointId}:${failingSince.getTime()}:${admin.userId}`,
        payload: {
          to: admin.user.email,
          subject: `Webhook endpoint ${endpointId} was disabled`,
          text: [
            `Your webhook endpoint ${endpointId} (${shown}) has failed every delivery attempt since ${since}, so it was disabled.`,
            "No further events are sent to it. Fix the receiver, enable the endpoint again",
            `(PATCH /v1/webhooks/endpoints/${endpointId} with {"enabled": true}) and replay the failed deliveries`,
            `(POST /v1/webhooks/endpoints/${endpointId}/replay).`,
          ].join("\n"),
        },
      });
    }
  };
}
