// The HTTP(S) server around the app: TLS when configured, explicit limits and timeouts, and a
// graceful shutdown that lets in-flight requests finish (bounded by the shutdown timeout).
import { readFileSync } from "node:fs";
import http, { type IncomingMessage, type RequestListener, type ServerResponse } from "node:http";
import https from "node:https";
import net, { type AddressInfo } from "node:net";
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

/** How long a connection may stay idle during the drain before it is closed (at most half the shutdown timeout). */
export const DRAIN_IDLE_GRACE_MS = 1_000;

/** At most this many connections (one per loop turn) are taken from the backlog after the signal. */
const MAX_BACKLOG_TURNS = 1_024;

// Why long: the server's options, its requests in flight and its drain on shutdown share one set and flag; in one place the drain's order reads top to bottom.
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
  /** The last request read on each connection: during the drain its answer closes the connection. */
  const latest = new WeakMap<object, ServerResponse>();
  let draining = false;
  // Registered before the app, so that it sees every response before the app can send it.
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    inFlight.add(res);
    latest.set(req.socket, res);
    // The header is decided when the answer's head is written, not when the request arrives:
    // pipelined requests already read behind this one are answered first, on the same connection.
    const writeHead = res.writeHead;
    res.writeHead = function (this: ServerResponse, ...args: Parameters<typeof writeHead>) {
      if (draining && latest.get(req.socket) === res) this.setHeader("Connection", "close");
      return writeHead.apply(this, args);
    } as typeof writeHead;
    res.once("close", () => inFlight.delete(res));
  });
  server.on("request", app);
  let accepted = 0;
  server.on("connection", () => accepted++);

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });

  /**
   * Stops accepting once the connections already waiting in the kernel's backlog are accepted
   * (clients that connected before the signal, even to a stopped or busy process); later ones
   * are refused. Connections stay
   * open while their requests are answered, each closed by the answer to the last request read
   * on it (`Connection: close`); a connection with nothing to answer is closed once it has stayed
   * idle for the idle grace. Node's own `close()` closes idle connections at once, including
   * those whose requests were sent but not yet read (a reset instead of answers), so the
   * listener is closed through net.Server's `close()` and idle connections only by the sweep,
   * after the event loop has read its sockets again. At the shutdown timeout, whatever is left
   * is cut off.
   */
  /**
   * Waits until a turn of the event loop accepts no connection. Node accepts one connection per
   * poll phase, so closing the listener at once would reset every connection still queued in the
   * kernel's backlog, whose clients may already have sent their requests. The first wait reaches
   * the check phase of the signal's turn; each further one spans a whole poll phase.
   */
  async function acceptBacklog(): Promise<void> {
    const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
    await nextTurn();
    for (let turns = 0, before = -1; accepted > before && turns < MAX_BACKLOG_TURNS; turns++) {
      before = accepted;
      await nextTurn();
    }
  }

  async function shutdown(): Promise<void> {
    draining = true;
    const acceptedBefore = accepted;
    await acceptBacklog();
    const closed = new Promise<void>((resolve) => net.Server.prototype.close.call(server, () => resolve()));
    // from here a new connection is refused (tests and operators wait for this line)
    logger.info("stopped accepting", { fromBacklog: accepted - acceptedBefore });
    const idleGraceMs = Math.min(DRAIN_IDLE_GRACE_MS, timeouts.shutdownMs / 2);
    // setImmediate: after the poll phase of the loop turn in which the timer fired, so that
    // bytes that arrived while the timer waited have been read and are requests by then
    const sweep = setInterval(() => setImmediate(() => server.closeIdleConnections()), idleGraceMs);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), timeouts.shutdownMs);
    });
    if (await Promise.race([closed.then(() => false), timedOut])) {
      logger.warn("shutdown timeout: closing the connections of unfinished requests", { requests: inFlight.size });
      server.closeAllConnections();
      await closed;
    }
    clearInterval(sweep);
    clearTimeout(timer);
  }

  return { server, protocol: tls ? "https" : "http", port: (server.address() as AddressInfo).port, shutdown };
}
