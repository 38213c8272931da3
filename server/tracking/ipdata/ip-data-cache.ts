// Whether the IP data's prepared forms exist (asn-table.ts, network-evidence.ts): a start without
// them prepares them first (server/main.ts, in a process of its own).
import { existsSync } from "node:fs";
import { asnTableCacheFile } from "./asn-table.ts";
import { evidenceCacheFile } from "./network-evidence.ts";

export function ipDataPrepared(): boolean {
  return existsSync(asnTableCacheFile()) && existsSync(evidenceCacheFile());
}
