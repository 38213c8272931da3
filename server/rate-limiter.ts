// Requests per API key per window. In memory by default (each instance counts on its own); with
// REDIS_URL all instances count in one Redis, so the limit holds however many run; the workers of
// one instance (WEB_CONCURRENCY, server/cluster.ts) count in their primary's memory.
//
// Redis unreachable: fail open to per-instance counting (decided in the spec's info.description).
// The limit protects capacity, not data: refusing every partner because the limiter's store is
// down would turn a Redis outage into an API outage, while counting locally still stops a single
// runaway client at each instance. The outage is logged once when it starts and once when it ends.
import cluster from "node:cluster";
import { Redis } from "ioredis";
import { type RateLimiterAbstract, RateLimiterCluster, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import type { RateLimitConfig } from "./config.ts";
import type { Logger } from "./logging.ts";

export interface RateLimitState {
  allowed: boolean;
  /** Requests left in the current window. */
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

export interface RateLimiter {
  readonly requests: number;
  readonly windowSeconds: number;
  /** Counts one request against `key`. */
  consume(key: string): Promise<RateLimitState>;
  close(): Promise<void>;
}

type Policy = Pick<RateLimitConfig, "requests" | "windowSeconds">;

function state(res: RateLimiterRes, allowed: boolean): RateLimitState {
  return { allowed, remaining: Math.max(0, res.remainingPoints), resetSeconds: Math.ceil(res.msBeforeNext / 1000) };
}

/** Rejections of rate-limiter-flexible are a RateLimiterRes when the limit is reached, an Error when the store failed. */
async function consumeWith(limiter: RateLimiterAbstract, key: string): Promise<RateLimitState> {
  try {
    return state(await limiter.consume(key), true);
  } catch (error) {
    if (error instanceof RateLimiterRes) return state(error, false);
    throw error;
  }
}

export function memoryRateLimiter(policy: Policy): RateLimiter {
  const memory = new RateLimiterMemory({ points: policy.requests, duration: policy.windowSeconds });
  return { ...policy, consume: (key) => consumeWith(memory, key), close: async () => {} };
}

/** How long a worker waits for its primary's count before counting on its own. */
const CLUSTER_TIMEOUT_MS = 2_000;

export async function createRateLimiter(config: RateLimitConfig, logger: Logger): Promise<RateLimiter> {
  if (config.redis) return redisRateLimiter(config, config.redis, logger);
  if (cluster.isWorker) {
    const shared = new RateLimiterCluster({ keyPrefix: "rate-limit", points: config.requests, duration: config.windowSeconds, timeoutMs: CLUSTER_TIMEOUT_MS });
    return withLocalFallback(shared, config, logger, async () => {});
  }
  return memoryRateLimiter(config);
}

async function redisRateLimiter(config: RateLimitConfig, redis: NonNullable<RateLimitConfig["redis"]>, logger: Logger): Promise<RateLimiter> {
  const client = new Redis(redis.url, {
    // fail fast instead of queueing commands while disconnected; reconnect in the background
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 1_000,
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
  // ioredis reports every failed reconnection attempt; the outage is logged once instead
  client.on("error", () => {});
  const shared = new RateLimiterRedis({
    storeClient: client,
    keyPrefix: `${redis.keyPrefix}rate-limit`,
    points: config.requests,
    duration: config.windowSeconds,
    rejectIfRedisNotReady: true,
  });
  const limiter = withLocalFallback(shared, config, logger, async () => void client.disconnect());
  // Wait for the first connection (or its failure) so that early requests do not count as an outage.
  await new Promise<void>((resolve) => {
    const onReady = () => {
      client.off("error", onError);
      resolve();
    };
    const onError = (error: Error) => {
      client.off("ready", onReady);
      limiter.storeFailed(error);
      resolve();
    };
    client.once("ready", onReady);
    client.once("error", onError);
  });
  return limiter;
}

/** Counts in the shared store; while it fails, each process counts on its own (logged once each way). */
function withLocalFallback(
  shared: RateLimiterAbstract,
  config: RateLimitConfig,
  logger: Logger,
  close: () => Promise<void>,
): RateLimiter & { storeFailed(error: unknown): void } {
  const local = memoryRateLimiter(config);
  let storeDown = false;
  const storeFailed = (error: unknown) => {
    if (storeDown) return;
    storeDown = true;
    logger.warn("rate-limit store unreachable: each instance enforces the limit on its own until it is back", {
      error: error instanceof Error ? error.message : String(error),
    });
  };
  return {
    requests: config.requests,
    windowSeconds: config.windowSeconds,
    storeFailed,
    async consume(key) {
      try {
        const result = await consumeWith(shared, key);
        if (storeDown) {
          storeDown = false;
          logger.info("rate-limit store reachable again: the limit is shared by all instances");
        }
        return result;
      } catch (error) {
        storeFailed(error);
        return local.consume(key);
      }
    },
    close,
  };
}
