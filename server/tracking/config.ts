// The collector's settings, from the environment.
import { positive, positiveInteger } from "../env-values.ts";

/** Reverse DNS of visitor addresses, the evidence of an organisation's domain (server/tracking/domain-evidence.ts). */
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

/** Reverse DNS settings from the environment given. */
export function loadReverseDnsConfig(env: Record<string, string | undefined>): ReverseDnsConfig {
  const servers = (env.TRACKING_DNS_SERVERS ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  const off = servers.length === 1 && /^(0|false|off|no)$/i.test(servers[0]!);
  return {
    enabled: !off,
    servers: off ? [] : servers,
    timeoutMs: positive(env, "TRACKING_DNS_TIMEOUT_MS", 1500),
    cacheSeconds: positiveInteger(env, "TRACKING_DNS_CACHE_SECONDS", 86_400),
    operatorPrefixes: positiveInteger(env, "TRACKING_DNS_OPERATOR_PREFIXES", 16),
  };
}

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
  /** Also load DB-IP's IPv6 city data (TRACKING_IPV6_GEO=1): more memory, IPv6 places. */
  ipv6Geo: boolean;
  reverseDns: ReverseDnsConfig;
  /** The ingest writer of this process. */
  writer: {
    /** Off: this process only collects; another process (`npm run ingest`) writes the queue. */
    enabled: boolean;
    /** Events per transaction. */
    batchSize: number;
    /** How often an idle writer looks at the queue. */
    pollMs: number;
  };
}

/** From the environment given (server/config.ts passes the process's, once). */
export function loadTrackingConfig(env: Record<string, string | undefined>): TrackingConfig {
  const loopbackIp = env.TRACKING_LOOPBACK_IP || undefined;
  if (loopbackIp && env.NODE_ENV === "production") throw new Error("TRACKING_LOOPBACK_IP is for the demo and refused in production");
  return {
    ipRequestsPerMinute: positiveInteger(env, "COLLECT_IP_REQUESTS_PER_MINUTE", 600),
    datasetEventsPerMinute: positiveInteger(env, "COLLECT_DATASET_EVENTS_PER_MINUTE", 600_000),
    settingsTtlSeconds: positiveInteger(env, "TRACKING_SETTINGS_TTL_SECONDS", 60),
    loopbackIp,
    ipv6Geo: env.TRACKING_IPV6_GEO === "1",
    reverseDns: loadReverseDnsConfig(env),
    writer: {
      enabled: !/^(0|false|off|no)$/i.test(env.INGEST_WRITER ?? ""),
      batchSize: positiveInteger(env, "INGEST_BATCH_SIZE", 1000),
      pollMs: positiveInteger(env, "INGEST_POLL_MS", 250),
    },
  };
}
