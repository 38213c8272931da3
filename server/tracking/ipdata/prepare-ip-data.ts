// Writes the IP data's prepared forms (the AS table's binary form, the network evidence) when
// they are missing. Run by `npm ci` / `npm install` (postinstall), so that a first start reads
// them; and by server/main.ts in a process of its own when a start finds them missing (an install
// without scripts, a new version of the data packages), so that the service keeps answering while
// the CSV is parsed and the evidence computed. Its argument: the cache directory
// (IP_DATA_CACHE_DIR), when not the default. A failure here is no failure of the install: the
// service prepares the data at its start instead.
import { setIpDataCacheDir } from "./asn-table.ts";
import { ipDataPrepared } from "./ip-data-cache.ts";
import { prepareEvidenceCache } from "./resolver.ts";

const forkedByService = typeof process.send === "function";
setIpDataCacheDir(process.argv[2] || undefined);
if (!ipDataPrepared()) {
  const started = performance.now();
  if (!forkedByService) console.log("preparing the IP-to-network data for the service's starts (once per data version: 10 to 30 s)");
  try {
    prepareEvidenceCache();
    if (!forkedByService) console.log(`IP-to-network data prepared in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  } catch (error) {
    console.log(`the IP-to-network data was not prepared (${(error as Error).message}): the service prepares it at its first start`);
  }
}
