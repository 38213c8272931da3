// Operators' network types per ASN (`npm run admin -- networks ...`): stored in
// NetworkTypeOverride, read by the collector and the IP look-up through a cache that every process
// renews after the tracking settings' cache time, so a change made anywhere is in effect
// everywhere within that time, without a restart.
import type { Db } from "../db/database.ts";
import { Invalid } from "../domain/errors.ts";
import type { NetworkType } from "../tracking/ipdata/network-class.ts";

export type OverridableType = Exclude<NetworkType, "unknown">;
export const OVERRIDABLE_TYPES: readonly OverridableType[] = ["business", "government", "isp", "hosting", "mobile", "education"];

export interface NetworkOverride {
  asn: number;
  type: OverridableType;
  note: string | null;
  updatedAt: Date;
}

/** Autonomous system numbers as the stored column holds them (4-byte ASNs up to 2^31 - 1). */
const MAX_ASN = 2_147_483_647;

function checkAsn(asn: number): void {
  if (!Number.isSafeInteger(asn) || asn < 1 || asn > MAX_ASN) {
    throw new Invalid("asn must be an autonomous system number", [{ location: "body", field: "asn", message: `must be a whole number from 1 to ${MAX_ASN}` }]);
  }
}

/** This process's copy of the overrides: read again once `ttlSeconds` have passed (createServices makes it once). */
export interface NetworkTypeCache {
  ttlSeconds: number;
  cached?: { until: number; types: ReadonlyMap<number, NetworkType> };
  loading?: Promise<ReadonlyMap<number, NetworkType>>;
}

export interface NetworkDeps {
  db: Db;
  now: () => Date;
  networkTypes: NetworkTypeCache;
}

export const networkTypeCache = (ttlSeconds: number): NetworkTypeCache => ({ ttlSeconds });

/** Sets (or replaces) the type of `asn`; in effect in every process within the cache time. */
export async function setType({ db }: Pick<NetworkDeps, "db">, asn: number, type: string, note?: string): Promise<NetworkOverride> {
  checkAsn(asn);
  if (!OVERRIDABLE_TYPES.includes(type as OverridableType)) {
    throw new Invalid(`type must be one of ${OVERRIDABLE_TYPES.join(", ")}`, [{ location: "body", field: "type", message: "is not a network type" }]);
  }
  const data = { type: type as OverridableType, note: note ?? null };
  return db.networkTypeOverride.upsert({ where: { asn }, create: { asn, ...data }, update: data });
}

export function list({ db }: Pick<NetworkDeps, "db">): Promise<NetworkOverride[]> {
  return db.networkTypeOverride.findMany({ select: { asn: true, type: true, note: true, updatedAt: true }, orderBy: { asn: "asc" } });
}

/** False when `asn` had no override. */
export async function remove({ db }: Pick<NetworkDeps, "db">, asn: number): Promise<boolean> {
  checkAsn(asn);
  return (await db.networkTypeOverride.deleteMany({ where: { asn } })).count > 0;
}

async function load({ db, now, networkTypes: cache }: NetworkDeps): Promise<ReadonlyMap<number, NetworkType>> {
  const rows = await db.networkTypeOverride.findMany({ select: { asn: true, type: true } });
  const types = new Map(rows.map((row) => [row.asn, row.type as NetworkType]));
  cache.cached = { until: now().getTime() + cache.ttlSeconds * 1000, types };
  return types;
}

/** The overrides as this process sees them: read again once the cache time has passed. */
export function current(deps: NetworkDeps): Promise<ReadonlyMap<number, NetworkType>> {
  const cache = deps.networkTypes;
  if (cache.cached && cache.cached.until > deps.now().getTime()) return Promise.resolve(cache.cached.types);
  cache.loading ??= load(deps).finally(() => {
    cache.loading = undefined;
  });
  return cache.loading;
}
