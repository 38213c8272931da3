// The collector's settings, from the environment.
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

function positive(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
  return value;
}

/** From the environment given (server/config.ts passes the process's, once). */
export function loadTrackingConfig(env: Record<string, string | undefined>): TrackingConfig {
  const loopbackIp = env.TRACKING_LOOPBACK_IP || undefined;
  if (loopbackIp && env.NODE_ENV === "production") throw new Error("TRACKING_LOOPBACK_IP is for the demo and refused in production");
  return {
    ipRequestsPerMinute: positive(env, "COLLECT_IP_REQUESTS_PER_MINUTE", 600),
    datasetEventsPerMinute: positive(env, "COLLECT_DATASET_EVENTS_PER_MINUTE", 600_000),
    settingsTtlSeconds: positive(env, "TRACKING_SETTINGS_TTL_SECONDS", 60),
    loopbackIp,
    ipv6Geo: env.TRACKING_IPV6_GEO === "1",
    writer: {
      enabled: !/^(0|false|off|no)$/i.test(env.INGEST_WRITER ?? ""),
      batchSize: positive(env, "INGEST_BATCH_SIZE", 1000),
      pollMs: positive(env, "INGEST_POLL_MS", 250),
    },
  };
}
