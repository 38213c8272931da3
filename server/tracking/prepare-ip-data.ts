// Writes the IP data's prepared forms (the AS table's binary form, the network evidence) when
// they are missing: run by server/main.ts in a process of its own at a first start, so that the
// service's process keeps answering while the CSV is parsed and the evidence computed.
// Its argument: the cache directory (IP_DATA_CACHE_DIR), when not the default.
import { setIpDataCacheDir } from "./asn-table.ts";
import { prepareEvidenceCache } from "./resolver.ts";

setIpDataCacheDir(process.argv[2] || undefined);
prepareEvidenceCache();
