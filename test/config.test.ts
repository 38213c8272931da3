// Operating configuration from the environment: defaults and refusals of nonsense.
import { describe, expect, it } from "vitest";
import { loadConfig, loadOperatorConfig } from "../server/config.ts";
import { databaseProblem } from "../server/db/database.ts";

/** What production requires (a key of 32 zero bytes is fine for a test of the schema). */
const PRODUCTION = { NODE_ENV: "production", SMTP_URL: "smtp://mail.example:587", CTD_ENCRYPTION_KEY: "0".repeat(64) };

describe("loadConfig", () => {
  it("when nothing is set, then the documented defaults apply and HTTPS is not required outside production", () => {
    const config = loadConfig({});
    expect(config.rateLimit).toEqual({ requests: 600, windowSeconds: 60, redis: undefined });
    expect(config.limits).toEqual({ bodyBytes: 1_048_576, urlLength: 4096, headerBytes: 16_384 });
    expect(config.timeouts).toEqual({ headersMs: 20_000, requestMs: 60_000, keepAliveMs: 5_000, shutdownMs: 10_000 });
    expect(config.requireHttps).toBe(false);
    expect(config.trustProxy).toBe(false);
    expect(config.tls).toBeUndefined();
  });

  it("when INGEST_LOG_URL is unset, then the ingest log is the database's queue table; when set, JetStream with the documented defaults", () => {
    expect(loadConfig({}).ingestLog).toBeUndefined();
    expect(loadConfig({ INGEST_LOG_URL: "nats://a:4222, nats://b:4222" }).ingestLog).toEqual({
      servers: ["nats://a:4222", "nats://b:4222"],
      stream: "INGEST",
      subject: "ingest.events",
      consumer: "writers",
      replicas: 1,
      maxAgeHours: 168,
      maxBytes: 1_073_741_824,
      ackWaitSeconds: 30,
      timeoutMs: 2_000,
      retryMs: 10_000,
    });
  });

  it("when an INGEST_LOG_* value is not what NATS accepts, then it is refused naming the variable", () => {
    expect(() => loadConfig({ INGEST_LOG_URL: "redis://a:6379" })).toThrow(/INGEST_LOG_URL/);
    expect(() => loadConfig({ INGEST_LOG_URL: "nats://a:4222", INGEST_LOG_SUBJECT: "ingest.*" })).toThrow(/INGEST_LOG_SUBJECT/);
    expect(() => loadConfig({ INGEST_LOG_URL: "nats://a:4222", INGEST_LOG_STREAM: "in.gest" })).toThrow(/INGEST_LOG_STREAM/);
    expect(() => loadConfig({ INGEST_LOG_URL: "nats://a:4222", INGEST_LOG_REPLICAS: "7" })).toThrow(/INGEST_LOG_REPLICAS/);
  });

  it("when NODE_ENV is production, then HTTPS is required unless REQUIRE_HTTPS=0", () => {
    expect(loadConfig(PRODUCTION).requireHttps).toBe(true);
    expect(loadConfig({ ...PRODUCTION, REQUIRE_HTTPS: "0" }).requireHttps).toBe(false);
  });

  it("when NODE_ENV is production without SMTP_URL or CTD_ENCRYPTION_KEY, then the configuration is refused naming both", () => {
    expect(() => loadConfig({ NODE_ENV: "production" })).toThrow(/SMTP_URL is required in production.*CTD_ENCRYPTION_KEY is required in production/);
  });

  it("when a test-only switch is on in production, then the configuration is refused naming it", () => {
    for (const name of ["WEBHOOK_ALLOW_PRIVATE_ADDRESSES", "CTD_ALLOW_PRIVATE_ADDRESSES"]) {
      expect(() => loadConfig({ ...PRODUCTION, [name]: "1" })).toThrow(new RegExp(`${name} is for tests only`));
    }
    expect(() => loadConfig({ ...PRODUCTION, TRACKING_LOOPBACK_IP: "17.253.144.10" })).toThrow(/TRACKING_LOOPBACK_IP is for the demo/);
  });

  it("when an on/off variable is set, then 1 true yes on are on and 0 false no off are off in any case, and anything else is refused", () => {
    expect(["1", "TRUE", "Yes", "on"].map((v) => loadConfig({ INGEST_WRITER: v }).tracking.writer.enabled)).toEqual([true, true, true, true]);
    expect(["0", "false", "NO", "Off"].map((v) => loadConfig({ TRACKING_IPV6_GEO: "1", INGEST_WRITER: v }).tracking.writer.enabled)).toEqual([false, false, false, false]);
    expect(loadConfig({ TRACKING_IPV6_GEO: "yes" }).tracking.ipv6Geo).toBe(true);
    expect(() => loadConfig({ SEED_DEMO: "maybe" })).toThrow(/SEED_DEMO must be on or off/);
  });

  it("when JOB_POLL_MS is set, then the queue polls at it; the deprecated CTD_JOB_POLL_MS still counts when JOB_POLL_MS is not set", () => {
    expect(loadConfig({}).jobs.pollMs).toBe(1_000);
    expect(loadConfig({ JOB_POLL_MS: "200" }).jobs.pollMs).toBe(200);
    expect(loadConfig({ CTD_JOB_POLL_MS: "300" }).jobs.pollMs).toBe(300);
    expect(loadConfig({ JOB_POLL_MS: "200", CTD_JOB_POLL_MS: "300" }).jobs.pollMs).toBe(200);
    expect(() => loadConfig({ JOB_POLL_MS: "soon" })).toThrow(/JOB_POLL_MS/);
  });

  it("when tracking-domain, tracking and webhook variables are set, then they are read by the same schema, fractions where a duration allows them", () => {
    const config = loadConfig({ CTD_JOB_RETRY_SECONDS: "0.1", CTD_OWN_DOMAINS: "Example.COM, other.test", TRACKING_DNS_SERVERS: "off", WEBHOOK_RETRY_SCHEDULE_SECONDS: "0.2,1" });
    expect(config.trackingDomains.jobs.retryDelayMs).toBe(100);
    expect(config.trackingDomains.ownDomains).toEqual(["example.com", "other.test", "track.leadintel.io"]);
    expect(config.tracking.reverseDns).toMatchObject({ enabled: false, servers: [] });
    expect(config.webhooks).toMatchObject({ retryScheduleMs: [200, 1000], jitter: false });
    expect(() => loadConfig({ CTD_CNAME_TARGET: "not a host" })).toThrow(/CTD_CNAME_TARGET must be a host name/);
    expect(() => loadConfig({ INGEST_BATCH_SIZE: "0" })).toThrow(/INGEST_BATCH_SIZE/);
    expect(loadConfig({}).tracking.writer.maxAttempts).toBe(3);
    expect(loadConfig({ INGEST_MAX_ATTEMPTS: "5" }).tracking.writer.maxAttempts).toBe(5);
    expect(() => loadConfig({ INGEST_MAX_ATTEMPTS: "0" })).toThrow(/INGEST_MAX_ATTEMPTS/);
    expect(loadConfig({ INGEST_LOG_URL: "nats://a:4222", INGEST_LOG_RETRY_MS: "0" }).ingestLog?.retryMs).toBe(0);
    expect(() => loadConfig({ CTD_ENCRYPTION_KEY: "short" })).toThrow(/CTD_ENCRYPTION_KEY must be 32 bytes/);
  });

  it("when REDIS_URL is set, then the limit is shared under REDIS_KEY_PREFIX", () => {
    expect(loadConfig({ REDIS_URL: "redis://cache:6379", REDIS_KEY_PREFIX: "p:" }).rateLimit.redis).toEqual({ url: "redis://cache:6379", keyPrefix: "p:" });
  });

  it("when TRUST_PROXY is a flag, a hop count or a list, then express gets a boolean, a number or the list", () => {
    expect(["true", "false", "2", "loopback, 10.0.0.0/8"].map((v) => loadConfig({ TRUST_PROXY: v }).trustProxy)).toEqual([true, false, 2, "loopback, 10.0.0.0/8"]);
  });

  it("when TRACKING_RECEIVED_AT_HEADER is unset, then the collector keeps its own clock; when it names a header, then in lower case, in production too; anything else is refused", () => {
    expect(loadConfig({}).tracking.receivedAtHeader).toBeUndefined();
    expect(loadConfig({ TRACKING_RECEIVED_AT_HEADER: "X-Request-Start" }).tracking.receivedAtHeader).toBe("x-request-start");
    expect(loadConfig({ ...PRODUCTION, TRACKING_RECEIVED_AT_HEADER: "x-request-start" }).tracking.receivedAtHeader).toBe("x-request-start");
    expect(() => loadConfig({ TRACKING_RECEIVED_AT_HEADER: "x request start" })).toThrow(/TRACKING_RECEIVED_AT_HEADER must be a header name/);
  });

  it("when only one of TLS_CERT_FILE and TLS_KEY_FILE is set, then the configuration is refused", () => {
    expect(() => loadConfig({ TLS_CERT_FILE: "cert.pem" })).toThrow(/together/);
  });

  it("when a limit is not a positive integer, then it is refused naming the variable", () => {
    expect(() => loadConfig({ RATE_LIMIT_REQUESTS: "0" })).toThrow(/RATE_LIMIT_REQUESTS/);
    expect(() => loadConfig({ BODY_LIMIT_BYTES: "1mb" })).toThrow(/BODY_LIMIT_BYTES/);
  });

  it("when the headers timeout exceeds the request timeout, then it is refused (node would be)", () => {
    expect(() => loadConfig({ HEADERS_TIMEOUT_MS: "70000" })).toThrow(/HEADERS_TIMEOUT_MS/);
  });

  it("when mail is not configured, then .eml files and the development key go beside DATA_DIR under its name; SMTP_URL must be an smtp URL", () => {
    const config = loadConfig({ DATA_DIR: "/srv/li/pglite" });
    expect(config.mail).toEqual({ smtpUrl: undefined, from: expect.stringContaining("@"), outboxDir: "/srv/li/pglite.mail" });
    expect(config.trackingDomains.devKeyFile).toBe("/srv/li/pglite.dev-encryption.key");
    expect(loadConfig({ DATA_DIR: "/srv/li/pglite", MAIL_DIR: "/var/mail/li" }).mail.outboxDir).toBe("/var/mail/li");
    expect(config.notify).toEqual({ publicUrl: undefined, fallbackUrl: "http://127.0.0.1:3000", inviteTtlHours: 168, inviteResendSeconds: 60, digestHourUtc: 7 });
    expect(loadConfig({ SMTP_URL: "smtps://u:p@mail.example:465", PUBLIC_BASE_URL: "https://api.example/" }).mail.smtpUrl).toBe("smtps://u:p@mail.example:465");
    expect(loadConfig({ PUBLIC_BASE_URL: "https://api.example/" }).notify.publicUrl).toBe("https://api.example");
    expect(() => loadConfig({ SMTP_URL: "mail.example:25" })).toThrow(/SMTP_URL/);
    expect(() => loadConfig({ DIGEST_HOUR_UTC: "24" })).toThrow(/DIGEST_HOUR_UTC/);
  });

  it("when an operator command loads its configuration, then a statement may run 10 minutes unless DATABASE_QUERY_TIMEOUT_MS says otherwise", () => {
    expect(loadConfig({}).database.timeouts?.queryMs).toBe(5_000);
    expect(loadOperatorConfig({}).database.timeouts?.queryMs).toBe(600_000);
    expect(loadOperatorConfig({ DATABASE_QUERY_TIMEOUT_MS: "1234" }).database.timeouts?.queryMs).toBe(1_234);
  });
});

describe("loadConfig start-up settings", () => {
  it("when DATABASE_URL is not a postgresql:// URL with a host, then it is refused naming the variable and the form it needs", () => {
    for (const url of ["not-a-url", "mysql://u@h/db", "postgresql://"]) {
      expect(() => loadConfig({ DATABASE_URL: url })).toThrow(/^DATABASE_URL must be a postgresql:\/\/ URL/);
    }
    for (const url of ["postgresql://u:p@127.0.0.1:5432/db", "postgres://db.example/x", "postgresql:///db?host=/var/run/postgresql"]) {
      expect(loadConfig({ DATABASE_URL: url }).database.url).toBe(url);
    }
  });

  it("when a DNS server setting is not an address (or off, for the tracking resolver), then it is refused naming the variable", () => {
    expect(() => loadConfig({ CTD_DNS_SERVERS: "off" })).toThrow(/^CTD_DNS_SERVERS must be comma-separated DNS server addresses/);
    expect(() => loadConfig({ TRACKING_DNS_SERVERS: "dns.example" })).toThrow(/^TRACKING_DNS_SERVERS must be/);
    expect(loadConfig({ CTD_DNS_SERVERS: "127.0.0.1:9, [::1]:53" }).trackingDomains.dns.servers).toEqual(["127.0.0.1:9", "[::1]:53"]);
    expect(loadConfig({ TRACKING_DNS_SERVERS: "off" }).tracking.reverseDns.enabled).toBe(false);
  });
});

describe("databaseProblem", () => {
  const postgres = { url: "postgresql://app:secret@db.example:6543/leads" };
  const failure = (code: string, message = "failed") => Object.assign(new Error(message), { code });

  it("when PostgreSQL refuses or cannot be reached, then the line names the server (never the password) and what to do", () => {
    expect(databaseProblem(failure("3D000"), postgres)).toBe('database "leads" does not exist on the PostgreSQL server at db.example:6543: create it (createdb leads) or correct DATABASE_URL');
    expect(databaseProblem(failure("28P01"), postgres)).toBe("the PostgreSQL server at db.example:6543 refused the login: correct the user or password in DATABASE_URL");
    expect(databaseProblem(failure("ECONNREFUSED"), postgres)).toMatch(/^no PostgreSQL server answers at db\.example:6543 \(ECONNREFUSED\): start it, correct DATABASE_URL/);
    expect(databaseProblem(new Error("Connection terminated due to connection timeout"), postgres)).toMatch(/did not answer in time/);
    for (const code of ["3D000", "28P01", "ECONNREFUSED", "XX000"]) expect(databaseProblem(failure(code), postgres)).not.toContain("secret");
  });

  it("when the embedded database's process fails, then the line names DATA_DIR and what to check, on one line", () => {
    const line = databaseProblem(new Error("exited with 1\nmore"), { dataDir: "/srv/pglite" });
    expect(line).toBe("the embedded database in /srv/pglite did not start: exited with 1 more. Check DATA_DIR (free disk space, write access), or use PostgreSQL with DATABASE_URL=");
  });
});
