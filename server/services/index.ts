// The rules of each tag, built once per app around one database client, from the configuration's
// values (server/config.ts): no defaults here.
import type { Db, Sql } from "../db/database.ts";
import type { Config } from "../config.ts";
import { resolveEncryptionKey, secretBox } from "../security/secret-box.ts";
import { JobQueue } from "../jobs/queue.ts";
import { registerRetentionJobs } from "../tracking/privacy/retention.ts";
import { createMailer, type Mailer, registerMailJobs } from "../notify/mail.ts";
import { registerSegmentAlertJobs, segmentAlertService } from "../notify/segment-alerts.ts";
import * as segmentEntries from "./segment-entries.ts";
import { createLogger, type Logger } from "../logging.ts";
import { newKeyCache } from "./accounts.ts";
import { certificateContext, registerCertificateJobs } from "./certificate-jobs.ts";
import * as contacts from "./contacts.ts";
import * as credits from "./credits.ts";
import type { EnrichmentDeps } from "../tracking/write/enrichment.ts";
import type { WriterOptions } from "../tracking/log/writer.ts";
import { sharedResolver } from "../tracking/ipdata/resolver.ts";
import { networkTypeCache } from "./networks.ts";
import { DomainEvidence } from "../tracking/write/domain-evidence.ts";
import { notifyAdminsOfDisabledEndpoint, registerWebhookJobs } from "../notify/webhook-job.ts";
import * as webhookEvents from "./webhook-events.ts";
import type { OnLeadsRemoved } from "../tracking/write/lead-store.ts";
import { IdentityStore } from "../identity/identities.ts";
import { addressKeys } from "../identity/addresses.ts";
import { writeEvents } from "../tracking/write/batch.ts";
import { PendingAttribution } from "../tracking/write/pending.ts";
import { declaredNetworks } from "../identity/declared-networks.ts";

/** The parts of the configuration the services are built from. */
export type ServiceConfig = Pick<Config, "trackingDomains" | "tracking" | "webhooks" | "jobs" | "mail" | "notify" | "retention" | "ingestLog">;

export interface ServiceOptions {
  /** The configuration's values (server/config.ts `loadConfig`); tests start from test/support/config.ts. */
  config: ServiceConfig;
  logger?: Logger;
  /** The time charges, ledger entries and idempotency keys are written at (tests move it). */
  now?: () => Date;
  /** How long a key check may be reused (revocation and licence changes made elsewhere take effect within it). */
  keyCacheMs?: number;
  /** The driver, for the hot path's statements (`Database.sql`); through Prisma when absent. */
  sql?: Sql;
  /**
   * The base URL of links in mail when PUBLIC_BASE_URL is not set: the address the server listens
   * on, known once it listens (server/main.ts).
   */
  listeningUrl?: () => string;
}

/** Whether the identity's prefix is the address's unit (its /32, its /64). */
const isUnit = (prefix: string, ip: string) => addressKeys(ip)?.unit === prefix;

// Why long: the wiring of every service to its dependencies, in the order they need each other.
export function createServices(db: Db, { config, logger = createLogger(), now = () => new Date(), keyCacheMs, sql, listeningUrl }: ServiceOptions) {
  const { trackingDomains, webhooks, notify, retention } = config;
  const hotSql: Sql = sql ?? ((statement) => db.$queryRawUnsafe(statement.text, ...statement.values));
  // the durable background jobs of this process (server/main.ts starts and stops it)
  // an idle queue looks for due jobs every JOB_POLL_MS
  const jobs = new JobQueue(db, logger, { now, pollMs: config.jobs.pollMs });
  // certificate provisioning: the `certificate` kind (CTD_JOB_* settings) of the same queue
  const certificates = certificateContext(trackingDomains, logger, config.jobs.pollMs);
  registerCertificateJobs({ db, jobs, certificates });
  // endpoint secrets are sealed with the tracking-domain key (CTD_ENCRYPTION_KEY), asked for on first use
  const webhookSecrets = secretBox(() => resolveEncryptionKey(trackingDomains, logger));
  const mailer: Mailer = createMailer(config.mail);
  registerMailJobs(jobs, mailer, logger);
  const segmentAlerts = segmentAlertService(db, jobs, { now, digestHourUtc: notify.digestHourUtc });
  registerSegmentAlertJobs(db, jobs, mailer, logger);
  // a lead entering a segment: an instant alert (queued in the entries' transaction), then the webhook event below
  const segmentListeners: segmentEntries.SegmentEnteredListeners = new Set();
  // the handles the writer's hooks pass to the modules (the same the returned object gives the routes)
  const shared = { db, hotSql, now, jobs, segmentListeners };
  segmentEntries.onSegmentEntered(shared, segmentAlerts.instantAlerts);
  const configuredUrl = notify.publicUrl;
  const invitations = {
    jobs,
    now,
    // PUBLIC_BASE_URL, else where the server listens, else the configured HOST and PORT
    publicUrl: configuredUrl ? () => configuredUrl : (listeningUrl ?? (() => config.notify.fallbackUrl)),
    ttlHours: notify.inviteTtlHours,
    resendSeconds: notify.inviteResendSeconds,
  };
  registerWebhookJobs(db, jobs, { config: webhooks, secrets: webhookSecrets, logger, now, onEndpointDisabled: notifyAdminsOfDisabledEndpoint(jobs) });
  // organisation domains from evidence: the ingest writer settles each batch's, ip-lookup asks reverse DNS
  const evidence = new DomainEvidence(db, config.tracking.reverseDns, logger);
  // the organisation behind an address of a shared network (server/identity): evidence, declarations, look-ups
  const identities = new IdentityStore(db, { identities: config.tracking.identities, reverseDns: config.tracking.reverseDns, now, logger });
  const declared = declaredNetworks(db);
  // One publisher of webhook events for every process: a lead entering a segment is a
  // segment.lead_entered event, in the entries' transaction (whose caller wakes the queue after its commit).
  segmentEntries.onSegmentEntered(shared, (entries, tx) => webhookEvents.onSegmentEntered(shared, entries, tx));
  const onLeadsRemoved: OnLeadsRemoved = (tx, removed, reason) => webhookEvents.onLeadsRemoved(shared, tx, removed, reason);
  /**
   * What every ingest writer (in the service, `npm run ingest`, tests) is wired with:
   * lead.created / lead.visited, then segment entries (so a lead's lead.created is queued before
   * its segment.lead_entered), inside each batch's transaction; contact.enriched after
   * enrichment; then the batch's organisation domains from evidence.
   */
  const onIngested: WriterOptions["onIngested"] = async (result, tx) => {
    await webhookEvents.onIngested(shared, result, tx);
    await segmentEntries.onIngested(shared, result, tx);
  };
  const identify: WriterOptions["identify"] = (queries, tx) => identities.identitiesOf(queries, tx);
  // at write time only an address's own identity (or a declared one): a prefix's holds an address
  // only once the address's own evidence (its PTR name) has been learned, which the backfill after
  // the batch waits for
  const identifyOwn: WriterOptions["identify"] = async (queries, tx) =>
    (await identify(queries, tx)).map((identity, i) => (identity && (identity.source === "declared" || isUnit(identity.prefix, queries[i]!.ip)) ? identity : undefined));
  // pending events of shared networks: learned from after each batch, attributed once their address has an identity
  const pending = new PendingAttribution(db, {
    identities,
    write: (tx, rows) => writeEvents(tx, rows, { onIngested, identify }),
    onCommitted: () => jobs.wake(),
    onLeadsRemoved,
    logger,
  });
  const ingestWiring: { deps: EnrichmentDeps; hooks: Pick<WriterOptions, "onIngested" | "identify" | "pending" | "onEnriched" | "evidence" | "onCommitted"> } = {
    // tracking/ is below services/: the enrichment gets the contact look-up and the charge handed in
    deps: {
      contacts: { find: (email) => contacts.find(shared, email) },
      credits: { charge: (charge) => credits.charge(shared, charge) },
      now,
    },
    hooks: {
      onIngested,
      identify: identifyOwn,
      pending,
      onEnriched: (outcomes) => webhookEvents.onEnriched(shared, outcomes),
      evidence,
      // the alert and webhook jobs onIngested queued run as soon as their batch committed
      onCommitted: () => jobs.wake(),
    },
  };
  return {
    // what the modules take as deps (services/<tag>.ts): the database, the hot path's driver, the clock, the queue, the segment listeners, accounts.ts's key cache, users.ts's invitation settings
    ...shared,
    keyCache: newKeyCache(keyCacheMs),
    invitations,
    ingestWiring,
    webhookConfig: webhooks,
    mailer,
    segmentAlerts,
    domainEvidence: evidence,
    // the identities store: what the ingest writer, erasure and retention call (server/identity/identities.ts)
    identities,
    // the daily `retention` job (server/main.ts schedules it)
    retention: registerRetentionJobs(db, jobs, retention, logger, now, { pendingDays: config.tracking.identities.pendingDays, identities, onLeadsRemoved }),
    // the deps of the tracking-side modules (certificate-jobs, custom-tracking-domains, lookup, webhooks, webhook-events, privacy, networks, tracking, declared-networks, segment-entries, leads, lead-operations)
    logger,
    certificates,
    idempotencyPurge: { lastAt: 0 },
    webhookSecrets,
    ingestLog: config.ingestLog,
    networkTypes: networkTypeCache(config.tracking.settingsTtlSeconds),
    resolver: sharedResolver,
    declaredNetworkStore: declared,
    pending,
  };
}

export type Services = ReturnType<typeof createServices>;
