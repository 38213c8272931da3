// The HTTP(S) server around the app: TLS when configured, explicit limits and timeouts, and a
// graceful shutdown that lets in-flight requests finish (bounded by the shutdown timeout).
import { readFileSync } from "node:fs";
import http, { type IncomingMessage, type RequestListener, type ServerResponse } from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import type { Config } from "./config.ts";
import type { Logger } from "./logging.ts";

export type ListenOptions = Pick<Config, "port" | "host" | "tls" | "timeouts"> & { limits: Pick<Config["limits"], "headerBytes"> };

export interface RunningServer {
  server: http.Server;
  protocol: "http" | "https";
  port: number;
  /** Stops accepting, lets in-flight requests finish (at most `timeouts.shutdownMs`), then closes every connection. */
  shutdown(): Promise<void>;
}

export async function listen(app: RequestListener, options: ListenOptions, logger: Logger): Promise<RunningServer> {
  const { timeouts, limits, tls } = options;
  const serverOptions: http.ServerOptions = {
    maxHeaderSize: limits.headerBytes,
    headersTimeout: timeouts.headersMs,
    requestTimeout: timeouts.requestMs,
    // how often node looks for connections past those timeouts (its default is 30 s)
    connectionsCheckingInterval: Math.min(5_000, timeouts.headersMs),
  };
  const server = tls
    ? https.createServer({ ...serverOptions, cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) })
    : http.createServer(serverOptions);
  server.keepAliveTimeout = timeouts.keepAliveMs;

  const inFlight = new Set<ServerResponse>();
  let draining = false;
  // Registered before the app, so that it sees every response before the app can send it.
  server.on("request", (_req: IncomingMessage, res: ServerResponse) => {
    inFlight.add(res);
    if (draining) res.setHeader("Connection", "close");
    res.once("close", () => {
      inFlight.delete(res);
      // a keep-alive connection whose response left before the drain started is idle now
      if (draining) setImmediate(() => server.closeIdleConnections());
    });
  });
  server.on("request", app);

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });

  async function shutdown(): Promise<void> {
    draining = true;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // answered requests close their connection instead of waiting for the next request
    for (const res of inFlight) if (!res.headersSent) res.setHeader("Connection", "close");
    server.closeIdleConnections();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), timeouts.shutdownMs);
    });
    if (await Promise.race([closed.then(() => false), timedOut])) {
      logger.warn("shutdown timeout: closing the connections of unfinished requests", { requests: inFlight.size });
      server.closeAllConnections();
      await closed;
    }
    clearTimeout(timer);
  }

  return { server, protocol: tls ? "https" : "http", port: (server.address() as AddressInfo).port, shutdown };
}
