// The rules of each tag, built once per app around one database client.
import { loadTrackingDomainConfig, resolveEncryptionKey, type TrackingDomainConfig } from "../ctd/config.ts";
import { secretBox } from "../ctd/secret-box.ts";
import { loadWebhookConfig, type WebhookConfig } from "../notify/config.ts";
import type { Db, Sql } from "../db/database.ts";
import os from "node:os";
import path from "node:path";
import { DEFAULT_RETENTION, type MailConfig, type NotifyConfig, type RetentionConfig } from "../config.ts";
import { createJobQueue } from "../jobs/queue.ts";
import { registerRetentionJobs } from "../jobs/retention.ts";
import { createMailer, type Mailer, registerMailJobs } from "../notify/mail.ts";
import { registerSegmentAlertJobs, segmentAlertService } from "../notify/segment-alerts.ts";
import { createLogger, type Logger } from "../logging.ts";
import { accessService } from "./access.ts";
import { accountService } from "./accounts.ts";
import { certificateJobService } from "./certificate-jobs.ts";
import { contactService } from "./contacts.ts";
import { creditReportService } from "./credit-reports.ts";
import { creditService } from "./credits.ts";
import { trackingDomainService } from "./custom-tracking-domains.ts";
import { datasetService } from "./datasets.ts";
import { idempotencyService } from "./idempotency.ts";
import { leadOperationService } from "./lead-operations.ts";
import { leadService } from "./leads.ts";
import { lookupService } from "./lookup.ts";
import type { EnrichmentDeps } from "../tracking/enrichment.ts";
import type { WriterOptions } from "../tracking/writer.ts";
import { segmentPreferenceService } from "./segment-preferences.ts";
import { segmentService } from "./segments.ts";
import { userDatasetService } from "./user-datasets.ts";
import { userService } from "./users.ts";
import { loadTrackingConfig } from "../tracking/config.ts";
import { sharedResolver } from "../tracking/resolver.ts";
import { networkService } from "./networks.ts";
import { loadReverseDnsConfig, type ReverseDnsConfig } from "../tracking/config.ts";
import { domainEvidence } from "../tracking/domain-evidence.ts";
import { trackingService } from "./tracking.ts";
import { notifyAdminsOfDisabledEndpoint, registerWebhookJobs } from "../notify/webhook-job.ts";
import { webhookEvents } from "../notify/events.ts";
import { webhookService } from "./webhooks.ts";
import { privacyService } from "./privacy.ts";

export interface ServiceOptions {
  /** Custom tracking domains; their defaults when not given. */
  trackingDomains?: TrackingDomainConfig;
  logger?: Logger;
  /** The time charges, ledger entries and idempotency keys are written at (tests move it). */
  now?: () => Date;
  /** How long a key check may be reused (revocation and licence changes made elsewhere take effect within it). */
  keyCacheMs?: number;
  /** The driver, for the hot path's statements (`Database.sql`); through Prisma when absent. */
  sql?: Sql;
  /** How often the job queue looks for due jobs when nobody wakes it (default 1 s). */
  jobPollMs?: number;
  /** Webhook delivery; its defaults when not given. */
  webhooks?: WebhookConfig;
  /** E-mail: SMTP or an outbox directory (default: .eml files in the system's temporary directory). */
  mail?: MailConfig;
  /** How long a process reuses the operators' network types (TRACKING_SETTINGS_TTL_SECONDS). */
  networkOverridesTtlSeconds?: number;
  /** Invitations and digests; `publicUrl` may be a getter (known once the server listens). */
  notify?: Partial<Omit<NotifyConfig, "publicUrl">> & { publicUrl?: string | (() => string) };
  /** Reverse DNS of visitor addresses (organisation domains); off when not given. */
  reverseDns?: ReverseDnsConfig;
  /** The retention job's own settings; the defaults when not given. */
  retention?: RetentionConfig;
}

const defaultMail = (): MailConfig => ({ from: "Lead Intelligence <no-reply@leadintel.io>", outboxDir: path.join(os.tmpdir(), "lead-intel-mail") });

export function createServices(
  db: Db,
  {
    trackingDomains = loadTrackingDomainConfig({}),
    logger = createLogger(),
    now = () => new Date(),
    keyCacheMs,
    sql,
    jobPollMs,
    mail,
    notify = {},
    webhooks = loadWebhookConfig({}),
    networkOverridesTtlSeconds = loadTrackingConfig({}).settingsTtlSeconds,
    reverseDns = loadReverseDnsConfig({ TRACKING_DNS_SERVERS: "off" }),
    retention = DEFAULT_RETENTION,
  }: ServiceOptions = {},
) {
  const networks = networkService(db, { ttlSeconds: networkOverridesTtlSeconds, now });
  const hotSql: Sql = sql ?? ((statement) => db.$queryRawUnsafe(statement.text, ...statement.values));
  const access = accessService(db);
  const contacts = contactService(db);
  const credits = creditService(db, hotSql);
  const idempotency = idempotencyService(db, now);
  // the durable background jobs of this process (server/main.ts starts and stops it)
  // an idle queue looks for due jobs every CTD_JOB_POLL_MS unless told otherwise
  const jobs = createJobQueue(db, logger, { now, pollMs: jobPollMs ?? trackingDomains.jobs.pollMs });
  // certificate provisioning: the `certificate` kind (CTD_JOB_* settings) of the same queue
  const certificateJobs = certificateJobService(db, { config: trackingDomains, logger, queue: jobs });
  // endpoint secrets are sealed with the tracking-domain key (CTD_ENCRYPTION_KEY), asked for on first use
  const webhookSecrets = secretBox(() => resolveEncryptionKey(trackingDomains, logger));
  const mailer: Mailer = createMailer(mail ?? defaultMail());
  registerMailJobs(jobs, mailer, logger);
  const segmentAlerts = segmentAlertService(db, jobs, { now, digestHourUtc: notify.digestHourUtc });
  registerSegmentAlertJobs(db, jobs, mailer, logger);
  const segments = segmentService(db, access, segmentAlerts);
  const publicUrl = notify.publicUrl;
  const invitations = {
    jobs,
    now,
    publicUrl: typeof publicUrl === "function" ? publicUrl : () => publicUrl ?? "http://127.0.0.1:3000",
    ttlHours: notify.inviteTtlHours ?? 168,
    resendSeconds: notify.inviteResendSeconds ?? 60,
  };
  registerWebhookJobs(db, jobs, { config: webhooks, secrets: webhookSecrets, logger, now, onEndpointDisabled: notifyAdminsOfDisabledEndpoint(jobs) });
  // organisation domains from evidence: the ingest writer settles each batch's, ip-lookup asks reverse DNS
  const evidence = domainEvidence(db, reverseDns, logger);
  // One publisher of webhook events for every process: a lead entering a segment is a
  // segment.lead_entered event, in the entries' transaction; the jobs it queues wake the queue.
  const events = webhookEvents(db, jobs, { now, wake: () => jobs.wake() });
  segmentAlerts.onSegmentEntered(events.onSegmentEntered);
  /**
   * What every ingest writer (in the service, `npm run ingest`, tests) is wired with: segment
   * entries, then lead.created / lead.visited, inside each batch's transaction; contact.enriched
   * after enrichment; then the batch's organisation domains from evidence.
   */
  const ingestWiring: { deps: EnrichmentDeps; hooks: Pick<WriterOptions, "onIngested" | "onEnriched" | "evidence"> } = {
    deps: { contacts, credits, now },
    hooks: {
      onIngested: async (result, tx) => {
        await segmentAlerts.onIngested(result, tx);
        await events.onIngested(result, tx);
      },
      onEnriched: events.onEnriched,
      evidence,
    },
  };
  return {
    jobs,
    ingestWiring,
    webhooks: webhookService(db, { config: webhooks, secrets: webhookSecrets, jobs: () => jobs, now }),
    webhookConfig: webhooks,
    mailer,
    segmentAlerts,
    accounts: accountService(db, hotSql, { keyCacheMs }),
    access,
    users: userService(db, access, invitations),
    userDatasets: userDatasetService(db, access),
    datasets: datasetService(db, access),
    trackingDomains: trackingDomainService(db, access, trackingDomains, certificateJobs),
    certificateJobs,
    segments,
    segmentPreferences: segmentPreferenceService(db, access, segments),
    leadOperations: leadOperationService(db, access, segmentAlerts),
    leads: leadService(db, access, segments),
    contacts,
    credits,
    lookup: lookupService({ credits, contacts, idempotency, now }),
    creditReports: creditReportService(db, access),
    // IP and domain look-ups, a lead's visits (server/tracking holds the collector and writer)
    tracking: trackingService(db, { access, contacts, resolver: sharedResolver, networkOverrides: networks.current, evidence }),
    // operators' network types per ASN (scripts/admin.ts `networks`)
    networks,
    domainEvidence: evidence,
    // consent and retention settings, export and erasure of a data subject
    privacy: privacyService(db, { access, now }),
    // the daily `retention` job (server/main.ts schedules it)
    retention: registerRetentionJobs(db, jobs, retention, logger, now),
  };
}

export type Services = ReturnType<typeof createServices>;
