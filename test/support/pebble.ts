// pebble, the ACME test server (Debian package `pebble`), started per test file on loopback.
// Its configuration is test/fixtures/pebble-config.json with free ports filled in: `httpPort` is
// where the test's instance of this service answers HTTP-01 challenges, and `tlsPort` is a port
// nothing listens on (TLS-ALPN-01 is not used). Its web front end gets a throw-away certificate
// for 127.0.0.1, made with openssl, which is the CA the ACME client is told to trust.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import { eventually, StopWaiting } from "./eventually.ts";

const fixture = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/pebble-config.json");

function installed(command: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Why the ACME tests cannot run here, or undefined when they can. */
export const pebbleMissing: string | undefined = !installed("pebble")
  ? "pebble is not installed; install it with `apt-get install -y pebble` (Debian/Ubuntu; .ci/run does this) to run the ACME tests"
  : !installed("openssl")
    ? "openssl is not installed; install it with `apt-get install -y openssl` to run the ACME tests"
    : undefined;

/** A port that was free a moment ago on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface Pebble {
  directoryUrl: string;
  /** The certificate of pebble's web front end: the CA to trust for the directory. */
  caPem: string;
  caFile: string;
  /** pebble's own output, for diagnosing a failed test. */
  output: string[];
  close(): Promise<void>;
}

/** Attempts at starting pebble: its ports are free a moment before it binds them, and on a busy
 * machine another process can take one in between (it then exits "address already in use"). */
const PEBBLE_START_ATTEMPTS = 3;

export async function startPebble({ httpPort, dnsServer }: { httpPort: number; dnsServer: string }): Promise<Pebble> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "pebble-"));
  const cert = path.join(dir, "cert.pem");
  const key = path.join(dir, "key.pem");
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
    "-keyout", key, "-out", cert, "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
  ], { stdio: "ignore" });
  for (let attempt = 1; ; attempt++) {
    try {
      return await startPebbleOnFreePorts({ dir, cert, key, httpPort, dnsServer });
    } catch (error) {
      const portTaken = error instanceof PebbleExited && /address already in use/.test(error.message);
      if (!portTaken || attempt >= PEBBLE_START_ATTEMPTS) {
        rmSync(dir, { recursive: true, force: true });
        throw error;
      }
    }
  }
}

class PebbleExited extends StopWaiting {}

async function startPebbleOnFreePorts(
  { dir, cert, key, httpPort, dnsServer }: { dir: string; cert: string; key: string; httpPort: number; dnsServer: string },
): Promise<Pebble> {
  const [listen, management, tls] = [await freePort(), await freePort(), await freePort()];
  const config = JSON.parse(readFileSync(fixture, "utf8")) as { pebble: Record<string, unknown> };
  Object.assign(config.pebble, {
    listenAddress: `127.0.0.1:${listen}`,
    managementListenAddress: `127.0.0.1:${management}`,
    certificate: cert,
    privateKey: key,
    httpPort,
    tlsPort: tls,
  });
  const configFile = path.join(dir, "pebble-config.json");
  writeFileSync(configFile, JSON.stringify(config, null, 2));

  const output: string[] = [];
  const child: ChildProcess = spawn("pebble", ["-config", configFile, "-dnsserver", dnsServer], {
    // No sleeps before validations, and no rejected nonces: a quick, deterministic CA.
    env: { ...process.env, PEBBLE_VA_NOSLEEP: "1", PEBBLE_WFE_NONCEREJECT: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  for (const stream of [child.stdout!, child.stderr!]) stream.on("data", (chunk: Buffer) => output.push(chunk.toString()));
  const caPem = readFileSync(cert, "utf8");
  const directoryUrl = `https://127.0.0.1:${listen}/dir`;
  try {
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new PebbleExited(`pebble exited: ${output.join("")}`);
        expect(await directoryStatus(directoryUrl, caPem), `pebble's directory; its output: ${output.join("")}`).toBe(200);
      },
      // A few hundred ms when quiet; a loaded CI machine (two cores, the suite beside it) takes far longer
      { timeoutMs: 90_000, intervalMs: 200 },
    );
  } catch (error) {
    await stopChild(child);
    throw error;
  }
  return {
    directoryUrl,
    caPem,
    caFile: cert,
    output,
    close: async () => {
      await stopChild(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

/** The directory's HTTP status, or the connection's error code while pebble is not listening yet. */
function directoryStatus(url: string, ca: string): Promise<number | string | undefined> {
  return new Promise((resolve) => {
    https.get(url, { ca }, (res) => {
      res.resume();
      resolve(res.statusCode);
    }).on("error", (error: NodeJS.ErrnoException) => resolve(error.code));
  });
}
