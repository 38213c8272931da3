// The one configuration module: the environment read once at start-up against a schema (zod),
// passed down from there. Defaults give the zero-setup embedded mode.
import path from "node:path";
import { z } from "zod";
import { loadTrackingDomainConfig, type TrackingDomainConfig } from "./ctd/config.ts";
import { loadTrackingConfig, type TrackingConfig } from "./tracking/config.ts";
import { loadWebhookConfig, type WebhookConfig } from "./notify/config.ts";
import type { IngestLogConfig } from "./tracking/ingest-log.ts";

export interface DatabaseConfig {
  /** A PostgreSQL URL; when absent the embedded PGlite database in `dataDir` is used. */
  url?: string;
  /** Embedded database directory; undefined means in memory (tests). */
  dataDir?: string;
  /** Bounds that turn a stopped or unreachable database into a quick 503 (server/db/database.ts). */
  timeouts?: DatabaseTimeouts;
}

export interface DatabaseTimeouts {
  /** Waiting for a connection of the pool, or for a new one to be set up. */
  connectMs: number;
  /** One statement: the client gives up after this, the server (PostgreSQL) cancels it too. */
  queryMs: number;
}

export const DEFAULT_DATABASE_TIMEOUTS: DatabaseTimeouts = { connectMs: 2_000, queryMs: 5_000 };

export interface RateLimitConfig {
  /** Requests one API key may make per window. */
  requests: number;
  windowSeconds: number;
  /** Shared store of all instances; without it each instance counts on its own. */
  redis?: { url: string; keyPrefix: string };
}

export interface LimitsConfig {
  /** Largest request body (413 beyond). */
  bodyBytes: number;
  /** Longest request target, path and query (400 `url_too_long` beyond). */
  urlLength: number;
  /** node's maxHeaderSize: request line and headers together (431 beyond, answered by node). */
  headerBytes: number;
}

export interface TimeoutsConfig {
  /** Time to receive the complete request headers. */
  headersMs: number;
  /** Time to receive the complete request (408 beyond, answered by node). */
  requestMs: number;
  /** How long an idle keep-alive connection stays open; keep it above the load balancer's idle timeout. */
  keepAliveMs: number;
  /** On SIGTERM: how long in-flight requests may take before their connections are closed. */
  shutdownMs: number;
}

export interface MailConfig {
  /** SMTP server (`smtp://user:pass@host:587`, `smtps://...`); unset: mail is written as .eml files to `outboxDir`. */
  smtpUrl?: string;
  /** The From of every mail. */
  from: string;
  /** Where mail goes without SMTP_URL (outside production only). */
  outboxDir: string;
}

export interface NotifyConfig {
  /** The service's public base URL, for links in mail; unset: the address it listens on. */
  publicUrl?: string;
  /** How long an invitation's accept link works. */
  inviteTtlHours: number;
  /** The least time between two resends of one member's invitation. */
  inviteResendSeconds: number;
  /** When daily and weekly digests are sent (UTC hour; weekly on Monday). */
  digestHourUtc: number;
}

export interface RetentionConfig {
  /** Finished jobs (done or dead) are deleted this many days after they finished. */
  jobDays: number;
  /** Settled webhook deliveries (delivered or failed), payload and attempts, are deleted this many days after they were created. */
  webhookDeliveryDays: number;
  /** Rows one retention statement deletes (bounded batches: short statements, short locks). */
  batchSize: number;
}

export const DEFAULT_RETENTION: RetentionConfig = { jobDays: 14, webhookDeliveryDays: 30, batchSize: 5_000 };

export interface Config {
  port: number;
  host: string;
  /** WEB_CONCURRENCY: processes that serve requests (1: no cluster; more: node:cluster workers). */
  workers: number;
  production: boolean;
  /** Validate every response against the spec (on outside production). */
  validateResponses: boolean;
  logLevel: "debug" | "info" | "warn" | "error" | "silent";
  /** Create the demo account and print a demo key at start (off in production). */
  seedDemo: boolean;
  database: DatabaseConfig;
  rateLimit: RateLimitConfig;
  limits: LimitsConfig;
  timeouts: TimeoutsConfig;
  /** Terminate TLS in this process (both files, PEM). */
  tls?: { certFile: string; keyFile: string };
  /** Express's `trust proxy`: which proxies' X-Forwarded-* headers to believe. */
  trustProxy: boolean | number | string;
  /** Refuse plain-HTTP partner requests with 403 `https_required` (on in production). */
  requireHttps: boolean;
  /** Custom tracking domains (the `CTD_*` variables). */
  trackingDomains: TrackingDomainConfig;
  /** The tracking script, collector and ingest writer (the `COLLECT_*`, `TRACKING_*`, `INGEST_*` variables). */
  tracking: TrackingConfig;
  /** Webhook delivery (the `WEBHOOK_*` variables). */
  webhooks: WebhookConfig;
  /** E-mail (the `SMTP_URL`, `MAIL_*` variables); production requires SMTP_URL (checked by server/main.ts). */
  mail: MailConfig;
  /** Invitations and segment alerts. */
  notify: NotifyConfig;
  /** The daily retention job (the `RETENTION_*` variables); datasets' own retentionDays are set over the API. */
  retention: RetentionConfig;
  /** The ingest log on NATS JetStream (the `INGEST_LOG_*` variables); undefined: the PostgreSQL queue table. */
  ingestLog?: IngestLogConfig;
}

const on = /^(1|true|yes|on)$/i;
/** An on/off variable: `1 true yes on` (any case) are on, anything else given is off; unset takes the default. */
const flag = z.string().optional().transform((v) => (v === undefined || v === "" ? undefined : on.test(v)));
/** An integer variable of at least `min`; unset (or empty) takes `fallback`. */
const integer = (fallback: number, min = 1) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === "") return fallback;
      const value = Number(v);
      if (Number.isInteger(value) && value >= min) return value;
      ctx.addIssue({ code: "custom", message: `must be an integer of at least ${min}, got "${v}"` });
      return z.NEVER;
    });
const text = z.string().optional().transform((v) => (v === "" ? undefined : v));

/** Every variable the service reads, with its default (README.md, Configuration and Operating it). */
const environment = z.object({
  NODE_ENV: text,
  PORT: integer(3000, 0).refine((port) => port <= 65535, "must be a port number"),
  HOST: text.transform((v) => v ?? "127.0.0.1"),
  WEB_CONCURRENCY: integer(1),
  VALIDATE_RESPONSES: flag,
  LOG_LEVEL: text.pipe(z.enum(["debug", "info", "warn", "error", "silent"]).default("info")),
  SEED_DEMO: flag,
  DATABASE_URL: text,
  DATA_DIR: text.transform((v) => v ?? ".data/pglite"),
  DATABASE_CONNECT_TIMEOUT_MS: integer(DEFAULT_DATABASE_TIMEOUTS.connectMs),
  DATABASE_QUERY_TIMEOUT_MS: integer(DEFAULT_DATABASE_TIMEOUTS.queryMs),
  RATE_LIMIT_REQUESTS: integer(600),
  RETENTION_JOB_DAYS: integer(DEFAULT_RETENTION.jobDays),
  RETENTION_WEBHOOK_DELIVERY_DAYS: integer(DEFAULT_RETENTION.webhookDeliveryDays),
  RETENTION_BATCH_SIZE: integer(DEFAULT_RETENTION.batchSize),
  RATE_LIMIT_WINDOW_SECONDS: integer(60),
  REDIS_URL: text,
  REDIS_KEY_PREFIX: text.transform((v) => v ?? "lead-intel:"),
  BODY_LIMIT_BYTES: integer(1_048_576),
  MAX_URL_LENGTH: integer(4096),
  MAX_HEADER_BYTES: integer(16_384),
  HEADERS_TIMEOUT_MS: integer(20_000),
  REQUEST_TIMEOUT_MS: integer(60_000),
  KEEP_ALIVE_TIMEOUT_MS: integer(5_000),
  SHUTDOWN_TIMEOUT_MS: integer(10_000),
  TLS_CERT_FILE: text,
  TLS_KEY_FILE: text,
  TRUST_PROXY: text,
  REQUIRE_HTTPS: flag,
  SMTP_URL: text.refine((v) => v === undefined || /^smtps?:\/\//.test(v), "must be an smtp:// or smtps:// URL"),
  MAIL_FROM: text.transform((v) => v ?? "Lead Intelligence <no-reply@leadintel.io>"),
  MAIL_DIR: text,
  PUBLIC_BASE_URL: text.refine((v) => v === undefined || /^https?:\/\/[^/]+/.test(v), "must be an http(s) URL"),
  INVITE_TTL_HOURS: integer(168),
  INVITE_RESEND_SECONDS: integer(60, 0),
  DIGEST_HOUR_UTC: integer(7, 0).refine((h) => h <= 23, "must be an hour 0-23"),
  INGEST_LOG_URL: text.refine((v) => v === undefined || v.split(",").every((s) => /^nats:\/\/[^/\s]+$/.test(s.trim())), "must be nats://host:port (comma-separated for a cluster)"),
  INGEST_LOG_STREAM: text.transform((v) => v ?? "INGEST").refine((v) => /^[A-Za-z0-9_-]+$/.test(v), "must be letters, digits, _ and -"),
  INGEST_LOG_SUBJECT: text.transform((v) => v ?? "ingest.events").refine((v) => /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(v), "must be dot-separated tokens without wildcards"),
  INGEST_LOG_CONSUMER: text.transform((v) => v ?? "writers").refine((v) => /^[A-Za-z0-9_-]+$/.test(v), "must be letters, digits, _ and -"),
  INGEST_LOG_REPLICAS: integer(1).refine((n) => n <= 5, "must be 1 to 5"),
  INGEST_LOG_MAX_AGE_HOURS: integer(168),
  INGEST_LOG_MAX_BYTES: integer(1_073_741_824),
  INGEST_LOG_ACK_WAIT_SECONDS: integer(30),
  INGEST_LOG_TIMEOUT_MS: integer(2_000),
});

/** `true`/`false`, a hop count, or what express accepts as a list (`loopback`, `10.0.0.0/8, 127.0.0.1`). */
function trustProxy(value: string | undefined): boolean | number | string {
  if (value === undefined || /^(false|0|no|off)$/i.test(value)) return false;
  if (/^(true|yes|on)$/i.test(value)) return true;
  return /^\d+$/.test(value) ? Number(value) : value;
}

function tls(certFile: string | undefined, keyFile: string | undefined): Config["tls"] {
  if (!certFile && !keyFile) return undefined;
  if (!certFile || !keyFile) throw new Error("TLS_CERT_FILE and TLS_KEY_FILE must be given together");
  return { certFile: path.resolve(certFile), keyFile: path.resolve(keyFile) };
}

/** Reads the configuration once (server/main.ts at start-up, scripts); everything below gets it passed in. */
/**
 * The configuration of an operator command (scripts/): as the service's, but one statement may
 * run for 10 minutes unless DATABASE_QUERY_TIMEOUT_MS says otherwise (an import, a migration or a
 * backlog drain is bulk work, not a request waiting for an answer).
 */
export function loadOperatorConfig(env: Record<string, string | undefined>): Config {
  return loadConfig({ DATABASE_QUERY_TIMEOUT_MS: String(10 * 60_000), ...env });
}

export function loadConfig(env: Record<string, string | undefined>): Config {
  const parsed = environment.safeParse(env);
  if (!parsed.success) {
    throw new Error(parsed.error.issues.map((issue) => `${issue.path.join(".")} ${issue.message}`).join("; "));
  }
  const e = parsed.data;
  const production = e.NODE_ENV === "production";
  const timeouts: TimeoutsConfig = {
    headersMs: e.HEADERS_TIMEOUT_MS,
    requestMs: e.REQUEST_TIMEOUT_MS,
    keepAliveMs: e.KEEP_ALIVE_TIMEOUT_MS,
    shutdownMs: e.SHUTDOWN_TIMEOUT_MS,
  };
  // node refuses a headers timeout longer than the request timeout
  if (timeouts.headersMs > timeouts.requestMs) throw new Error("HEADERS_TIMEOUT_MS must not exceed REQUEST_TIMEOUT_MS");
  return {
    port: e.PORT,
    host: e.HOST,
    workers: e.WEB_CONCURRENCY,
    production,
    validateResponses: e.VALIDATE_RESPONSES ?? !production,
    logLevel: e.LOG_LEVEL,
    seedDemo: e.SEED_DEMO ?? !production,
    database: {
      ...(e.DATABASE_URL ? { url: e.DATABASE_URL } : { dataDir: path.resolve(e.DATA_DIR) }),
      timeouts: { connectMs: e.DATABASE_CONNECT_TIMEOUT_MS, queryMs: e.DATABASE_QUERY_TIMEOUT_MS },
    },
    rateLimit: {
      requests: e.RATE_LIMIT_REQUESTS,
      windowSeconds: e.RATE_LIMIT_WINDOW_SECONDS,
      redis: e.REDIS_URL ? { url: e.REDIS_URL, keyPrefix: e.REDIS_KEY_PREFIX } : undefined,
    },
    limits: { bodyBytes: e.BODY_LIMIT_BYTES, urlLength: e.MAX_URL_LENGTH, headerBytes: e.MAX_HEADER_BYTES },
    timeouts,
    tls: tls(e.TLS_CERT_FILE, e.TLS_KEY_FILE),
    trustProxy: trustProxy(e.TRUST_PROXY),
    requireHttps: e.REQUIRE_HTTPS ?? production,
    trackingDomains: loadTrackingDomainConfig(env),
    tracking: loadTrackingConfig(env),
    webhooks: loadWebhookConfig(env),
    mail: {
      smtpUrl: e.SMTP_URL,
      from: e.MAIL_FROM,
      // next to the embedded database's directory: .data/mail by default
      outboxDir: path.resolve(e.MAIL_DIR ?? path.join(path.dirname(e.DATA_DIR), "mail")),
    },
    notify: {
      publicUrl: e.PUBLIC_BASE_URL?.replace(/\/+$/, ""),
      inviteTtlHours: e.INVITE_TTL_HOURS,
      inviteResendSeconds: e.INVITE_RESEND_SECONDS,
      digestHourUtc: e.DIGEST_HOUR_UTC,
    },
    retention: { jobDays: e.RETENTION_JOB_DAYS, webhookDeliveryDays: e.RETENTION_WEBHOOK_DELIVERY_DAYS, batchSize: e.RETENTION_BATCH_SIZE },
    ingestLog: e.INGEST_LOG_URL
      ? {
          servers: e.INGEST_LOG_URL.split(",").map((s) => s.trim()),
          stream: e.INGEST_LOG_STREAM,
          subject: e.INGEST_LOG_SUBJECT,
          consumer: e.INGEST_LOG_CONSUMER,
          replicas: e.INGEST_LOG_REPLICAS,
          maxAgeHours: e.INGEST_LOG_MAX_AGE_HOURS,
          maxBytes: e.INGEST_LOG_MAX_BYTES,
          ackWaitSeconds: e.INGEST_LOG_ACK_WAIT_SECONDS,
          timeoutMs: e.INGEST_LOG_TIMEOUT_MS,
        }
      : undefined,
  };
}
