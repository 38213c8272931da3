// The dataset a collector request is for: the active custom tracking domain named by the Host
// header, else `?dataset=`. Settings are cached for a short time (TRACKING_SETTINGS_TTL_SECONDS),
// so the collector does not read them per request and a settings change reaches the script and
// the collector within that time.
import type { Db } from "../../db/database.ts";
import { Invalid, NotFound } from "../../domain/errors.ts";

export interface TrackedDataset {
  accountId: string;
  datasetId: string;
  formTracking: boolean;
  partialFormTracking: boolean;
  contactEnrichment: boolean;
  allowIpMasking: boolean;
  formInputAttribute: string | null;
  consentMode: "none" | "required" | "cookieless";
  respectDoNotTrack: boolean;
}

const select = {
  accountId: true,
  id: true,
  formTracking: true,
  partialFormTracking: true,
  contactEnrichment: true,
  allowIpMasking: true,
  formInputAttribute: true,
  consentMode: true,
  respectDoNotTrack: true,
} as const;

export function trackedDatasets(db: Db, ttlSeconds: number) {
  const cache = new Map<string, { until: number; value: TrackedDataset | null }>();

  async function cached(key: string, load: () => Promise<TrackedDataset | null>): Promise<TrackedDataset | null> {
    const hit = cache.get(key);
    if (hit && hit.until > Date.now()) return hit.value;
    const value = await load();
    if (cache.size > 10_000) cache.clear(); // bounded: unknown ids and hosts cannot grow it without limit
    cache.set(key, { until: Date.now() + ttlSeconds * 1000, value });
    return value;
  }

  const toTracked = (d: { id: string } & Omit<TrackedDataset, "datasetId">): TrackedDataset => ({
    accountId: d.accountId,
    datasetId: d.id,
    formTracking: d.formTracking,
    partialFormTracking: d.partialFormTracking,
    contactEnrichment: d.contactEnrichment,
    allowIpMasking: d.allowIpMasking,
    formInputAttribute: d.formInputAttribute,
    consentMode: d.consentMode,
    respectDoNotTrack: d.respectDoNotTrack,
  });

  const byHost = (host: string) =>
    cached(`host:${host}`, async () => {
      const domain = await db.trackingDomain.findFirst({ where: { domain: host, state: "active" }, select: { dataset: { select } } });
      return domain ? toTracked(domain.dataset) : null;
    });
  const byId = (id: string) =>
    cached(`id:${id}`, async () => {
      const dataset = await db.dataset.findUnique({ where: { id }, select });
      return dataset ? toTracked(dataset) : null;
    });

  return {
    /** The request's dataset; 400 when none is named, 404 when it does not exist. */
    async resolve(host: string, datasetParam: unknown): Promise<TrackedDataset> {
      const onDomain = await byHost(host.toLowerCase());
      const named = typeof datasetParam === "string" && datasetParam ? datasetParam : undefined;
      if (onDomain) {
        if (named && named !== onDomain.datasetId) {
          throw new Invalid("This tracking domain serves another dataset", [{ location: "query", field: "dataset", message: "is not the dataset of this tracking domain" }]);
        }
        return onDomain;
      }
      if (!named) throw new Invalid("Name the dataset", [{ location: "query", field: "dataset", message: "is required outside a custom tracking domain" }]);
      const dataset = await byId(named);
      if (!dataset) throw new NotFound(`Dataset ${named} does not exist`, "unknown_dataset");
      return dataset;
    },
  };
}

export type TrackedDatasets = ReturnType<typeof trackedDatasets>;
