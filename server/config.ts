// The one configuration module: every environment variable the service and its commands read is
// declared in one schema (zod) below, parsed once at start-up, and passed down from there as
// values. Nothing else reads process.env, and no service keeps defaults of its own: the defaults
// here give the zero-setup embedded mode. Requirements of production (SMTP_URL,
// CTD_ENCRYPTION_KEY) and the test-only switches it refuses are checked here too.
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import path from "node:path";
import { domainToASCII } from "node:url";
import { z } from "zod";

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
  /** Where mail goes without SMTP_URL (outside production only): MAIL_DIR, else `${DATA_DIR}.mail`. */
  outboxDir: string;
}

export interface NotifyConfig {
  /** PUBLIC_BASE_URL, for links in mail; unset: the address the service listens on (known once it listens). */
  publicUrl?: string;
  /** The base of links when PUBLIC_BASE_URL is unset and no listening address is known (commands, tests): http://HOST:PORT. */
  fallbackUrl: string;
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
  /** Erasure tombstones are deleted this many hours after the erasure: INGEST_LOG_MAX_AGE_HOURS, the longest an event waits in the log. */
  tombstoneHours: number;
  /** Dead-lettered ingest batches (they hold visitors' events) are deleted this many days after they were set aside, or sooner by their dataset's retention. */
  deadLetterDays: number;
}

export const DEFAULT_RETENTION: RetentionConfig = { jobDays: 14, webhookDeliveryDays: 30, batchSize: 5_000, tombstoneHours: 168, deadLetterDays: 30 };

/** Reverse DNS of visitor addresses, the evidence of an organisation's domain (server/tracking/write/domain-evidence.ts). */
export interface ReverseDnsConfig {
  /** TRACKING_DNS_SERVERS=off: no reverse DNS look-ups. */
  enabled: boolean;
  /** TRACKING_DNS_SERVERS: resolvers (`ip` or `ip:port`, comma-separated); empty: the system's. */
  servers: readonly string[];
  /** TRACKING_DNS_TIMEOUT_MS: the most one look-up may take (one try). */
  timeoutMs: number;
  /** TRACKING_DNS_CACHE_SECONDS: how long the answer for a /24 (IPv6 /48) is kept. */
  cacheSeconds: number;
  /**
   * TRACKING_DNS_OPERATOR_PREFIXES: a PTR domain seen on this many /24s or more is taken for an
   * access network's own and names no visiting organisation (a company's traffic leaves through few).
   */
  operatorPrefixes: number;
}

/** Identities behind shared networks (server/identity): the organisation at an address, from evidence. */
export interface IdentityConfig {
  /** TRACKING_IDENTITY_DAYS: evidence counts this long after it was last seen; an identity without renewing evidence expires then. */
  windowDays: number;
  /** TRACKING_IDENTITY_POOL_REVERSE_DNS: reverse DNS evidence (public data) serves every account, not only the one whose visitor brought it. */
  poolReverseDns: boolean;
  /** TRACKING_PENDING_DAYS: page views and forms of shared networks wait this long, unlisted, for their address's identity (then deleted). */
  pendingDays: number;
}

/** The tracking script, collector and ingest writer (the `COLLECT_*`, `TRACKING_*`, `INGEST_*` variables). */
export interface TrackingConfig {
  /** Requests one client address may send to the collector per minute. */
  ipRequestsPerMinute: number;
  /** Events one dataset may send per minute (all its visitors together). */
  datasetEventsPerMinute: number;
  /** How long a dataset's settings (and /t.js) may be cached, in seconds. */
  settingsTtlSeconds: number;
  /**
   * Demo only, refused in production: the address loopback clients are taken to have, so that a
   * browser on the same machine as the demo shows up as an organisation.
   */
  loopbackIp?: string;
  /**
   * TRACKING_RECEIVED_AT_HEADER (lower case): the header in which a trusted proxy (TRUST_PROXY) gives
   * the time it received a collector request, the events' time (replayed traffic, benchmarks); unset: the collector's clock.
   */
  receivedAtHeader?: string;
  /** Also load DB-IP's IPv6 city data (TRACKING_IPV6_GEO=1): more memory, IPv6 places. */
  ipv6Geo: boolean;
  /** IP_DATA_CACHE_DIR: where the IP data's prepared forms are kept (default node_modules/.cache; bench:start uses an empty one). */
  ipDataCacheDir?: string;
  reverseDns: ReverseDnsConfig;
  identities: IdentityConfig;
  /** The ingest writer of this process. */
  writer: {
    /** Off: this process only collects; another process (`npm run ingest`) writes the queue. */
    enabled: boolean;
    /** Events per transaction. */
    batchSize: number;
    /** How often an idle writer looks at the queue. */
    pollMs: number;
    /** Batches the writer writes at once, each in its own transaction (on its own connection). */
    transactions: number;
    /** Tries of a batch the database refuses (a constraint or data error) before it is set aside into the dead-letter table. */
    maxAttempts: number;
  };
}

/** The Standard Webhooks example schedule: after a failed attempt n, wait SCHEDULE[n-1] seconds. */
export const STANDARD_RETRY_SCHEDULE_SECONDS = [5, 300, 1800, 7200, 18_000, 36_000, 36_000] as const;

/** Webhook delivery (the `WEBHOOK_*` variables). */
export interface WebhookConfig {
  /** Delays after failed attempts 1, 2, ... (ms); its length + 1 is the number of attempts. */
  retryScheduleMs: number[];
  /** One attempt's limit: connection, request and answer (ms). */
  timeoutMs: number;
  /** An endpoint failing without a success for this long is disabled (ms). */
  disableAfterMs: number;
  /** The furthest a Retry-After may push the next attempt (ms). */
  maxRetryAfterMs: number;
  /** Refuse `http://` endpoint URLs (on in production). */
  requireHttps: boolean;
  /** Test-only: let endpoints be and resolve to loopback and private addresses. Refused in production. */
  allowPrivateAddresses: boolean;
  /** Add the queue's jitter to the schedule (off only in tests that count the waits). */
  jitter: boolean;
}

export const LETS_ENCRYPT_PRODUCTION = "https://acme-v02.api.letsencrypt.org/directory";

/** Custom tracking domains (the `CTD_*` variables; the spec's Custom Tracking Domains tag). */
export interface TrackingDomainConfig {
  /** The host every custom tracking domain must be a CNAME to. */
  cnameTarget: string;
  /** Our own domains: neither they nor their sub-domains can be a customer's tracking domain. */
  ownDomains: string[];
  acme: {
    directoryUrl: string;
    /** Contact e-mail given to the ACME account; never logged. */
    contactEmail?: string;
    /** Extra CA certificates (PEM) trusted for the ACME server, e.g. a test server's. */
    caPem?: string;
  };
  dns: { servers: string[]; timeoutMs: number; tries: number };
  /** How long add and update wait for the outcome of certificate generation. */
  addWaitMs: number;
  /** AES-256 key (CTD_ENCRYPTION_KEY) for private keys and webhook secrets at rest; required in production. */
  encryptionKey?: Buffer;
  /**
   * Outside production, without CTD_ENCRYPTION_KEY: the development key's file, made on first use:
   * beside the embedded database (`${DATA_DIR}.dev-encryption.key`), or on PostgreSQL, where
   * DATA_DIR holds no database, `dev-encryption.key` in DATA_DIR's parent (default `.data/`).
   */
  devKeyFile: string;
  /** On PostgreSQL: where earlier releases kept the development key (its key is copied from there, so what it sealed still opens). */
  formerDevKeyFile?: string;
  /** Test-only: let ACME traffic reach loopback and private addresses. Refused in production. */
  allowPrivateAddresses: boolean;
  /** The queue's `certificate` kind. */
  jobs: {
    /** A worker's claim on a job lasts this long unless renewed (a killed worker's job is picked up after it). */
    leaseMs: number;
    /** Attempts before a job fails for good. */
    maxAttempts: number;
    /** Delay before a failed attempt is tried again. */
    retryDelayMs: number;
  };
}

/** The durable job queue (server/jobs/queue.ts), the `JOB_*` variables. */
export interface JobsConfig {
  /** How often an idle queue looks for due jobs (an enqueue in this process wakes it at once). */
  pollMs: number;
}

/** The JetStream stream and consumer (server/config.ts reads them from INGEST_LOG_*). */
export interface IngestLogConfig {
  /** INGEST_LOG_URL: the NATS servers (`nats://host:port`, several for a cluster). */
  servers: string[];
  /** INGEST_LOG_STREAM: the stream's name (created when missing). */
  stream: string;
  /** INGEST_LOG_SUBJECT: the one subject the collectors publish to. */
  subject: string;
  /** INGEST_LOG_CONSUMER: the writers' durable pull consumer. */
  consumer: string;
  /** INGEST_LOG_REPLICAS: copies of each message in a JetStream cluster (3 in production). */
  replicas: number;
  /** INGEST_LOG_MAX_AGE_HOURS: a message not written within this is dropped by the stream. */
  maxAgeHours: number;
  /** INGEST_LOG_MAX_BYTES: the stream's size bound; a full stream refuses new batches (503). */
  maxBytes: number;
  /** INGEST_LOG_ACK_WAIT_SECONDS: a batch not acknowledged within this goes to another writer. */
  ackWaitSeconds: number;
  /** INGEST_LOG_TIMEOUT_MS: the longest a collector waits for the stream's acknowledgement of one publish. */
  timeoutMs: number;
  /** INGEST_LOG_RETRY_MS: how long a collector tries a publish again (a stream leader's election, a reconnect) before it answers 503. */
  retryMs: number;
}

export interface Config {
  port: number;
  host: string;
  /** WEB_CONCURRENCY: processes that serve requests (1: no cluster; more: node:cluster workers). */
  workers: number;
  /** NODE_ENV=production: the one production flag. */
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
  /** The job queue (the `JOB_*` variables). */
  jobs: JobsConfig;
  /** E-mail (the `SMTP_URL`, `MAIL_*` variables); production requires SMTP_URL. */
  mail: MailConfig;
  /** Invitations and segment alerts. */
  notify: NotifyConfig;
  /** The daily retention job (the `RETENTION_*` variables); datasets' own retentionDays are set over the API. */
  retention: RetentionConfig;
  /** The ingest log on NATS JetStream (the `INGEST_LOG_*` variables); undefined: the PostgreSQL queue table. */
  ingestLog?: IngestLogConfig;
}

/** The one meaning of "on": `1 true yes on` (any case); `0 false no off` are off. */
const ON = /^(1|true|yes|on)$/i;
const OFF = /^(0|false|no|off)$/i;
/** An on/off variable; unset (or empty) is undefined, so that the caller's default applies. */
const flag = z
  .string()
  .optional()
  .transform((v, ctx) => {
    if (v === undefined || v === "") return undefined;
    if (ON.test(v)) return true;
    if (OFF.test(v)) return false;
    ctx.addIssue({ code: "custom", message: `must be on or off (1/0, true/false, yes/no, on/off), got "${v}"` });
    return z.NEVER;
  });
/** A number of at least `min` (a whole one when `integer`); unset (or empty) takes `fallback`. */
const number = (fallback: number, { min = 1, integer = true, positive = false }: { min?: number; integer?: boolean; positive?: boolean } = {}) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === "") return fallback;
      const value = Number(v);
      if (Number.isFinite(value) && (!integer || Number.isInteger(value)) && (positive ? value > 0 : value >= min)) return value;
      const what = positive ? "a positive number" : integer ? `an integer of at least ${min}` : `a number of at least ${min}`;
      ctx.addIssue({ code: "custom", message: `must be ${what}, got "${v}"` });
      return z.NEVER;
    });
const integer = (fallback: number, min = 1) => number(fallback, { min });
/** A positive number, fractions allowed (seconds and milliseconds of the tracking-domain and webhook settings). */
const positive = (fallback: number) => number(fallback, { integer: false, positive: true });
const text = z.string().optional().transform((v) => (v === "" ? undefined : v));
/** A comma-separated list (blanks dropped). */
const list = text.transform((v) => (v ?? "").split(",").map((s) => s.trim()).filter(Boolean));
/** A DNS server as node's resolver takes it: `ip`, `ip:port` or `[ipv6]:port` (node would throw a stack at start). */
const isDnsServer = (server: string) => {
  const match = /^\[(.+)\]:(\d+)$/.exec(server) ?? /^([^:]+):(\d+)$/.exec(server);
  return match ? isIP(match[1]!) !== 0 && Number(match[2]) <= 65535 : isIP(server) !== 0;
};
const dnsServers = (allowOff: boolean) =>
  list.refine((servers) => (allowOff && servers.length === 1 && OFF.test(servers[0]!)) || servers.every(isDnsServer), {
    message: `must be comma-separated DNS server addresses (ip or ip:port)${allowOff ? ", or off" : ""}`,
  });
/** An HTTP header name (a token of RFC 9110), in lower case. */
const headerName = text
  .refine((v) => v === undefined || /^[!#$%&'*+.^_`|~0-9a-z-]+$/i.test(v), "must be a header name, like x-request-start")
  .transform((v) => v?.toLowerCase());
/** A host name in its ASCII form (IDN to punycode, lower case, no trailing dot). */
const hostName = z.string().transform((v, ctx) => {
  const ascii = /[\s/:@?#%[\]\\]/.test(v.trim()) ? "" : domainToASCII(v.trim().replace(/\.$/, "")).toLowerCase();
  if (ascii) return ascii;
  ctx.addIssue({ code: "custom", message: `must be a host name, got "${v}"` });
  return z.NEVER;
});

/** A URL pg can connect with: postgres:// or postgresql:// and a host (`not-a-url` would silently mean a server at "base"). */
function isPostgresUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === "postgresql:" || url.protocol === "postgres:") && (url.hostname !== "" || url.searchParams.has("host"));
  } catch {
    return false;
  }
}

/** Every variable the service and its commands read, with its default (docs: Configuration). */
const environment = z
  .object({
    NODE_ENV: text,
    PORT: integer(3000, 0).refine((port) => port <= 65535, "must be a port number"),
    HOST: text.transform((v) => v ?? "127.0.0.1"),
    WEB_CONCURRENCY: integer(1),
    VALIDATE_RESPONSES: flag,
    LOG_LEVEL: text.pipe(z.enum(["debug", "info", "warn", "error", "silent"]).default("info")),
    SEED_DEMO: flag,
    DATABASE_URL: text.refine((v) => v === undefined || isPostgresUrl(v), {
      message: "must be a postgresql:// URL (postgresql://user:password@host:5432/database), or unset for the embedded database",
    }),
    DATA_DIR: text.transform((v) => v ?? ".data/pglite"),
    DATABASE_CONNECT_TIMEOUT_MS: integer(DEFAULT_DATABASE_TIMEOUTS.connectMs),
    DATABASE_QUERY_TIMEOUT_MS: integer(DEFAULT_DATABASE_TIMEOUTS.queryMs),
    RATE_LIMIT_REQUESTS: integer(600),
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
    // mail and notifications
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
    INGEST_LOG_MAX_AGE_HOURS: integer(DEFAULT_RETENTION.tombstoneHours),
    INGEST_LOG_MAX_BYTES: integer(1_073_741_824),
    INGEST_LOG_ACK_WAIT_SECONDS: integer(30),
    INGEST_LOG_TIMEOUT_MS: integer(2_000),
    INGEST_LOG_RETRY_MS: integer(10_000, 0),
    // the job queue and retention
    JOB_POLL_MS: text,
    /** Deprecated alias of JOB_POLL_MS (its name before the queue served more than certificates). */
    CTD_JOB_POLL_MS: text,
    RETENTION_JOB_DAYS: integer(DEFAULT_RETENTION.jobDays),
    RETENTION_WEBHOOK_DELIVERY_DAYS: integer(DEFAULT_RETENTION.webhookDeliveryDays),
    RETENTION_BATCH_SIZE: integer(DEFAULT_RETENTION.batchSize),
    RETENTION_DEAD_LETTER_DAYS: integer(DEFAULT_RETENTION.deadLetterDays),
    // tracking: collector, ingest writer, reverse DNS
    COLLECT_IP_REQUESTS_PER_MINUTE: integer(600),
    COLLECT_DATASET_EVENTS_PER_MINUTE: integer(600_000),
    TRACKING_SETTINGS_TTL_SECONDS: integer(60),
    TRACKING_LOOPBACK_IP: text,
    TRACKING_RECEIVED_AT_HEADER: headerName,
    TRACKING_IPV6_GEO: flag,
    IP_DATA_CACHE_DIR: text,
    TRACKING_DNS_SERVERS: dnsServers(true),
    TRACKING_DNS_TIMEOUT_MS: positive(1500),
    TRACKING_DNS_CACHE_SECONDS: integer(86_400),
    TRACKING_DNS_OPERATOR_PREFIXES: integer(16),
    TRACKING_IDENTITY_DAYS: integer(90),
    TRACKING_PENDING_DAYS: integer(30),
    TRACKING_IDENTITY_POOL_REVERSE_DNS: flag,
    INGEST_WRITER: flag,
    INGEST_BATCH_SIZE: integer(1000),
    INGEST_POLL_MS: integer(250),
    INGEST_WRITER_TRANSACTIONS: integer(2),
    INGEST_MAX_ATTEMPTS: integer(3),
    // webhooks
    WEBHOOK_RETRY_SCHEDULE_SECONDS: text,
    WEBHOOK_TIMEOUT_MS: positive(15_000),
    WEBHOOK_DISABLE_AFTER_HOURS: positive(120),
    WEBHOOK_ALLOW_PRIVATE_ADDRESSES: flag,
    // custom tracking domains
    CTD_CNAME_TARGET: text.transform((v) => v ?? "track.leadintel.io").pipe(hostName),
    CTD_OWN_DOMAINS: text.transform((v) => (v ?? "leadintel.io").split(",").map((s) => s.trim()).filter(Boolean)).pipe(z.array(hostName)),
    CTD_ACME_DIRECTORY_URL: text.transform((v) => v ?? LETS_ENCRYPT_PRODUCTION),
    CTD_ACME_EMAIL: text,
    CTD_ACME_CA_FILE: text,
    CTD_DNS_SERVERS: dnsServers(false),
    CTD_DNS_TIMEOUT_MS: positive(2500),
    CTD_ADD_WAIT_SECONDS: positive(540),
    CTD_ENCRYPTION_KEY: text.transform((v, ctx) => {
      if (v === undefined) return undefined;
      const key = parseEncryptionKey(v);
      if (key) return key;
      ctx.addIssue({ code: "custom", message: "must be 32 bytes: 64 hex characters or 44 base64 characters" });
      return z.NEVER;
    }),
    CTD_ALLOW_PRIVATE_ADDRESSES: flag,
    CTD_JOB_LEASE_SECONDS: positive(60),
    CTD_JOB_MAX_ATTEMPTS: integer(3),
    CTD_JOB_RETRY_SECONDS: positive(30),
  })
  .superRefine((e, ctx) => {
    if (e.NODE_ENV !== "production") return;
    const issue = (name: string, message: string) => ctx.addIssue({ code: "custom", path: [name], message });
    if (!e.SMTP_URL) issue("SMTP_URL", "is required in production (smtp://user:password@host:587)");
    if (!e.CTD_ENCRYPTION_KEY) issue("CTD_ENCRYPTION_KEY", "is required in production (32 bytes: 64 hex or 44 base64 characters)");
    if (e.TRACKING_LOOPBACK_IP) issue("TRACKING_LOOPBACK_IP", "is for the demo and refused in production");
    if (e.WEBHOOK_ALLOW_PRIVATE_ADDRESSES) issue("WEBHOOK_ALLOW_PRIVATE_ADDRESSES", "is for tests only and refused in production");
    if (e.CTD_ALLOW_PRIVATE_ADDRESSES) issue("CTD_ALLOW_PRIVATE_ADDRESSES", "is for tests only and refused in production");
  });

type Environment = z.output<typeof environment>;

/** A 32-byte key given as 64 hex characters or as base64; undefined when it is neither. */
export function parseEncryptionKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, "hex") : Buffer.from(trimmed, "base64");
  return key.length === 32 ? key : undefined;
}

/** `true`/`false`, a hop count, or what express accepts as a list (`loopback`, `10.0.0.0/8, 127.0.0.1`). */
function trustProxy(value: string | undefined): boolean | number | string {
  if (value === undefined || OFF.test(value)) return false;
  if (ON.test(value)) return true;
  return /^\d+$/.test(value) ? Number(value) : value;
}

function tls(certFile: string | undefined, keyFile: string | undefined): Config["tls"] {
  if (!certFile && !keyFile) return undefined;
  if (!certFile || !keyFile) throw new Error("TLS_CERT_FILE and TLS_KEY_FILE must be given together");
  return { certFile: path.resolve(certFile), keyFile: path.resolve(keyFile) };
}

function reverseDns(e: Environment): ReverseDnsConfig {
  const off = e.TRACKING_DNS_SERVERS.length === 1 && OFF.test(e.TRACKING_DNS_SERVERS[0]!);
  return {
    enabled: !off,
    servers: off ? [] : e.TRACKING_DNS_SERVERS,
    timeoutMs: e.TRACKING_DNS_TIMEOUT_MS,
    cacheSeconds: e.TRACKING_DNS_CACHE_SECONDS,
    operatorPrefixes: e.TRACKING_DNS_OPERATOR_PREFIXES,
  };
}

function webhooks(e: Environment, production: boolean): WebhookConfig {
  const raw = e.WEBHOOK_RETRY_SCHEDULE_SECONDS;
  const schedule = raw ? raw.split(",").map((s) => Number(s.trim())) : [...STANDARD_RETRY_SCHEDULE_SECONDS];
  if (!schedule.every((s) => Number.isFinite(s) && s >= 0)) {
    throw new Error(`WEBHOOK_RETRY_SCHEDULE_SECONDS must be comma-separated non-negative seconds, got "${raw}"`);
  }
  return {
    retryScheduleMs: schedule.map((s) => Math.round(s * 1000)),
    timeoutMs: e.WEBHOOK_TIMEOUT_MS,
    disableAfterMs: e.WEBHOOK_DISABLE_AFTER_HOURS * 3_600_000,
    maxRetryAfterMs: 24 * 3_600_000,
    requireHttps: production,
    allowPrivateAddresses: e.WEBHOOK_ALLOW_PRIVATE_ADDRESSES ?? false,
    jitter: !raw,
  };
}

function trackingDomains(e: Environment, dataDir: string): TrackingDomainConfig {
  const ownDomains = [...e.CTD_OWN_DOMAINS];
  // the target itself is always ours
  if (!ownDomains.some((d) => e.CTD_CNAME_TARGET === d || e.CTD_CNAME_TARGET.endsWith(`.${d}`))) ownDomains.push(e.CTD_CNAME_TARGET);
  return {
    cnameTarget: e.CTD_CNAME_TARGET,
    ownDomains,
    acme: {
      directoryUrl: e.CTD_ACME_DIRECTORY_URL,
      contactEmail: e.CTD_ACME_EMAIL,
      caPem: e.CTD_ACME_CA_FILE ? readFileSync(e.CTD_ACME_CA_FILE, "utf8") : undefined,
    },
    dns: { servers: e.CTD_DNS_SERVERS, timeoutMs: e.CTD_DNS_TIMEOUT_MS, tries: 2 },
    addWaitMs: e.CTD_ADD_WAIT_SECONDS * 1000,
    encryptionKey: e.CTD_ENCRYPTION_KEY,
    ...(e.DATABASE_URL
      ? { devKeyFile: path.join(path.dirname(dataDir), "dev-encryption.key"), formerDevKeyFile: `${dataDir}.dev-encryption.key` }
      : { devKeyFile: `${dataDir}.dev-encryption.key` }),
    allowPrivateAddresses: e.CTD_ALLOW_PRIVATE_ADDRESSES ?? false,
    jobs: {
      leaseMs: e.CTD_JOB_LEASE_SECONDS * 1000,
      maxAttempts: e.CTD_JOB_MAX_ATTEMPTS,
      retryDelayMs: e.CTD_JOB_RETRY_SECONDS * 1000,
    },
  };
}

/** JOB_POLL_MS, or its deprecated name CTD_JOB_POLL_MS; 1 s by default. */
function jobs(e: Environment): JobsConfig {
  const [name, raw] = e.JOB_POLL_MS !== undefined ? ["JOB_POLL_MS", e.JOB_POLL_MS] : ["CTD_JOB_POLL_MS", e.CTD_JOB_POLL_MS];
  const parsed = integer(1_000).safeParse(raw);
  if (!parsed.success) throw new Error(`${name} ${parsed.error.issues[0]?.message}`);
  return { pollMs: parsed.data };
}

/**
 * The configuration of an operator command (scripts/): as the service's, but one statement may
 * run for 10 minutes unless DATABASE_QUERY_TIMEOUT_MS says otherwise (an import, a migration or a
 * backlog drain is bulk work, not a request waiting for an answer).
 */
export function loadOperatorConfig(env: Record<string, string | undefined>): Config {
  return loadConfig({ DATABASE_QUERY_TIMEOUT_MS: String(10 * 60_000), ...env });
}

/** Reads the configuration once (server/main.ts at start-up, scripts/); everything below gets it passed in. */
// Why long: one mapping of every environment variable to its field of Config, read top to bottom beside the schema above.
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
  // DATA_DIR is the embedded database's own directory (PGlite owns what is inside); what else the
  // service keeps on disk sits beside it under its name, as its lock (`.lock`) and socket (`.run`) do.
  const dataDir = path.resolve(e.DATA_DIR);
  return {
    port: e.PORT,
    host: e.HOST,
    workers: e.WEB_CONCURRENCY,
    production,
    validateResponses: e.VALIDATE_RESPONSES ?? !production,
    logLevel: e.LOG_LEVEL,
    seedDemo: e.SEED_DEMO ?? !production,
    database: {
      ...(e.DATABASE_URL ? { url: e.DATABASE_URL } : { dataDir }),
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
    trackingDomains: trackingDomains(e, dataDir),
    tracking: {
      ipRequestsPerMinute: e.COLLECT_IP_REQUESTS_PER_MINUTE,
      datasetEventsPerMinute: e.COLLECT_DATASET_EVENTS_PER_MINUTE,
      settingsTtlSeconds: e.TRACKING_SETTINGS_TTL_SECONDS,
      loopbackIp: e.TRACKING_LOOPBACK_IP,
      receivedAtHeader: e.TRACKING_RECEIVED_AT_HEADER,
      ipv6Geo: e.TRACKING_IPV6_GEO ?? false,
      ...(e.IP_DATA_CACHE_DIR ? { ipDataCacheDir: path.resolve(e.IP_DATA_CACHE_DIR) } : {}),
      reverseDns: reverseDns(e),
      identities: { windowDays: e.TRACKING_IDENTITY_DAYS, poolReverseDns: e.TRACKING_IDENTITY_POOL_REVERSE_DNS ?? false, pendingDays: e.TRACKING_PENDING_DAYS },
      writer: { enabled: e.INGEST_WRITER ?? true, batchSize: e.INGEST_BATCH_SIZE, pollMs: e.INGEST_POLL_MS, transactions: e.INGEST_WRITER_TRANSACTIONS, maxAttempts: e.INGEST_MAX_ATTEMPTS },
    },
    webhooks: webhooks(e, production),
    jobs: jobs(e),
    mail: {
      smtpUrl: e.SMTP_URL,
      from: e.MAIL_FROM,
      outboxDir: path.resolve(e.MAIL_DIR ?? `${dataDir}.mail`),
    },
    notify: {
      publicUrl: e.PUBLIC_BASE_URL?.replace(/\/+$/, ""),
      fallbackUrl: `http://${e.HOST === "0.0.0.0" ? "127.0.0.1" : e.HOST}:${e.PORT}`,
      inviteTtlHours: e.INVITE_TTL_HOURS,
      inviteResendSeconds: e.INVITE_RESEND_SECONDS,
      digestHourUtc: e.DIGEST_HOUR_UTC,
    },
    retention: {
      jobDays: e.RETENTION_JOB_DAYS,
      webhookDeliveryDays: e.RETENTION_WEBHOOK_DELIVERY_DAYS,
      batchSize: e.RETENTION_BATCH_SIZE,
      tombstoneHours: e.INGEST_LOG_MAX_AGE_HOURS,
      deadLetterDays: e.RETENTION_DEAD_LETTER_DAYS,
    },
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
          retryMs: e.INGEST_LOG_RETRY_MS,
        }
      : undefined,
  };
}
