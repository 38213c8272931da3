// This machine's Redis (127.0.0.1:6379 unless REDIS_TEST_URL says otherwise), for the tests of a
// rate limit shared by several instances. A fresh machine may have none: those tests are then
// skipped, unless REQUIRE_REDIS=1 (set by .ci/run), which makes its absence a failure.
import { Redis } from "ioredis";

export const redisTestUrl = process.env.REDIS_TEST_URL ?? "redis://127.0.0.1:6379";

export async function redisAvailable(): Promise<boolean> {
  const client = new Redis(redisTestUrl, { lazyConnect: true, connectTimeout: 1_000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on("error", () => {});
  try {
    await client.connect();
    return (await client.ping()) === "PONG";
  } catch {
    if (process.env.REQUIRE_REDIS === "1") throw new Error(`REQUIRE_REDIS=1 but no Redis answers at ${redisTestUrl}`);
    return false;
  } finally {
    client.disconnect();
  }
}

/** Removes every key under `prefix` (each test run uses its own). */
export async function deleteKeys(prefix: string): Promise<void> {
  const client = new Redis(redisTestUrl);
  try {
    const keys = await client.keys(`${prefix}*`);
    if (keys.length) await client.del(...keys);
  } finally {
    client.disconnect();
  }
}
