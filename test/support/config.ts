// The configuration of in-process test services: the service's own schema (server/config.ts) with
// hermetic settings, so that nothing here keeps defaults of its own either.
import os from "node:os";
import path from "node:path";
import { type Config, loadConfig } from "../../server/config.ts";
import { newEncryptionKey } from "../../server/security/secret-box.ts";

/**
 * No reverse DNS; tracking-domain DNS goes to a closed loopback port (look-ups fail at once
 * instead of asking the network) and add/update wait one second; invitations may be resent at
 * once; mail files and a development key (none is needed: a key is given) beside a temporary DATA_DIR.
 */
export const HERMETIC_ENV: Readonly<Record<string, string>> = {
  TRACKING_DNS_SERVERS: "off",
  CTD_DNS_SERVERS: "127.0.0.1:9",
  CTD_ADD_WAIT_SECONDS: "1",
  INVITE_RESEND_SECONDS: "0",
  DATA_DIR: path.join(os.tmpdir(), "lead-intel-test", "pglite"),
};

/** The configuration of `env` over the hermetic settings, with a fresh CTD_ENCRYPTION_KEY. */
export function testConfig(env: Record<string, string | undefined> = {}): Config {
  return loadConfig({ ...HERMETIC_ENV, CTD_ENCRYPTION_KEY: newEncryptionKey().toString("hex"), ...env });
}
