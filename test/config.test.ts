// Operating configuration from the environment: defaults and refusals of nonsense.
import { describe, expect, it } from "vitest";
import { loadConfig, loadOperatorConfig } from "../server/config.ts";

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
    });
  });

  it("when an INGEST_LOG_* value is not what NATS accepts, then it is refused naming the variable", () => {
    expect(() => loadConfig({ INGEST_LOG_URL: "redis://a:6379" })).toThrow(/INGEST_LOG_URL/);
    expect(() => loadConfig({ INGEST_LOG_URL: "nats://a:4222", INGEST_LOG_SUBJECT: "ingest.*" })).toThrow(/INGEST_LOG_SUBJECT/);
    expect(() => loadConfig({ INGEST_LOG_URL: "nats://a:4222", INGEST_LOG_STREAM: "in.gest" })).toThrow(/INGEST_LOG_STREAM/);
    expect(() => loadConfig({ INGEST_LOG_URL: "nats://a:4222", INGEST_LOG_REPLICAS: "7" })).toThrow(/INGEST_LOG_REPLICAS/);
  });

  it("when NODE_ENV is production, then HTTPS is required unless REQUIRE_HTTPS=0", () => {
    expect(loadConfig({ NODE_ENV: "production" }).requireHttps).toBe(true);
    expect(loadConfig({ NODE_ENV: "production", REQUIRE_HTTPS: "0" }).requireHttps).toBe(false);
  });

  it("when REDIS_URL is set, then the limit is shared under REDIS_KEY_PREFIX", () => {
    expect(loadConfig({ REDIS_URL: "redis://cache:6379", REDIS_KEY_PREFIX: "p:" }).rateLimit.redis).toEqual({ url: "redis://cache:6379", keyPrefix: "p:" });
  });

  it("when TRUST_PROXY is a flag, a hop count or a list, then express gets a boolean, a number or the list", () => {
    expect(["true", "false", "2", "loopback, 10.0.0.0/8"].map((v) => loadConfig({ TRUST_PROXY: v }).trustProxy)).toEqual([true, false, 2, "loopback, 10.0.0.0/8"]);
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

  it("when mail is not configured, then .eml files go next to the embedded database; SMTP_URL must be an smtp URL", () => {
    const config = loadConfig({ DATA_DIR: "/srv/li/pglite" });
    expect(config.mail).toEqual({ smtpUrl: undefined, from: expect.stringContaining("@"), outboxDir: "/srv/li/mail" });
    expect(config.notify).toEqual({ publicUrl: undefined, inviteTtlHours: 168, inviteResendSeconds: 60, digestHourUtc: 7 });
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
