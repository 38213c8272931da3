// Headless Chromium from Debian through playwright-core (Playwright's own browser download is
// not reachable here). Browser tests skip, naming the install command, when it is missing.
import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

export const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const chromiumMissing = existsSync(chromiumPath)
  ? undefined
  : `Chromium not found at ${chromiumPath}: apt-get install -y chromium (or set CHROMIUM_PATH)`;

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    timeout: 30_000,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
      "--disable-sync",
      "--disable-quic",
    ],
  });
}

/** Whether a URL stays on this machine (data: and blob: URLs never leave the page). */
export function staysLocal(url: string): boolean {
  const { protocol, hostname } = new URL(url);
  if (protocol === "data:" || protocol === "blob:" || protocol === "about:") return true;
  return hostname === "127.0.0.1" || hostname === "localhost" || hostname === "[::1]";
}

/** Listens on an ephemeral port of `host` (127.0.0.1 or localhost: two origins for one machine); its origin. */
export async function listenOn(server: import("node:http").Server, host: "127.0.0.1" | "localhost"): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return `http://${host}:${(server.address() as import("node:net").AddressInfo).port}`;
}

/** Closes the servers a browser test listened with, open keep-alive connections included. */
export async function closeServers(servers: import("node:http").Server[]): Promise<void> {
  await Promise.all(servers.map((server) => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  })));
}
