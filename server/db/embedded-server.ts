// The embedded database (PGlite, one PostgreSQL backend in WebAssembly) served over the
// PostgreSQL protocol to local processes: the API (and its workers) and the operator CLI connect
// with plain `pg`, as to PostgreSQL, and WebAssembly PostgreSQL runs on this process's event
// loop, not on theirs.
//
// One backend means one session for all connections. @electric-sql/pglite-socket's handler does
// the protocol framing; its query queue is replaced here because it keeps a connection's messages
// together only inside BEGIN ... COMMIT: between one connection's Parse and Sync (the extended
// protocol of every parameterised query) only the timing of promise callbacks keeps another
// connection's Parse from replacing the unnamed statement. This queue gives the session to one
// connection from its first message until a Sync or a simple Query has been answered with the
// session idle, outside any transaction. So statements and transactions run one at a time, each
// whole: what PostgreSQL runs concurrently runs serially here, which keeps every lock-based rule
// exact (a row lock is never contended). Session settings (SET) would leak between connections:
// the API sets none.
import { chmod, mkdir, rm } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import path from "node:path";
import type { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketHandler, type PGLiteSocketHandlerOptions } from "@electric-sql/pglite-socket";

/** The port number in the socket file's name (`.s.PGSQL.<port>`), as libpq and pg expect. */
export const SOCKET_PORT = 5432;

interface Pending {
  handlerId: number;
  message: Uint8Array;
  onData: (data: Uint8Array) => void;
  resolve: (bytes: number) => void;
  reject: (error: Error) => void;
}

const SYNC = 0x53; // 'S'
const QUERY = 0x51; // 'Q'
const TERMINATE = 0x58; // 'X'
const SYNC_MESSAGE = new Uint8Array([SYNC, 0, 0, 0, 4]);

/** Ends an exchange: after it the session may pass to another connection (when idle). */
const endsExchange = (message: Uint8Array) => [SYNC, QUERY, TERMINATE].includes(message[0]!) || message[0] === 0; // 0: startup

export class SessionQueue {
  private queue: Pending[] = [];
  private owner: number | null = null;
  private running = false;

  constructor(private readonly db: PGlite) {}

  enqueue(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> {
    return new Promise((resolve, reject) => {
      this.queue.push({ handlerId, message, onData, resolve, reject });
      void this.drain();
    });
  }

  getQueueLength(): number {
    return this.queue.length;
  }

  clearQueueForHandler(handlerId: number): void {
    this.queue = this.queue.filter((p) => {
      if (p.handlerId === handlerId) p.reject(new Error("connection closed"));
      return p.handlerId !== handlerId;
    });
  }

  /** A connection that left while it held the session: end its exchange and roll its transaction back. */
  async clearTransactionIfNeeded(handlerId: number): Promise<void> {
    if (this.owner !== handlerId) return;
    await this.db.runExclusive(() => this.db.execProtocolRawStream(SYNC_MESSAGE, { onRawData: () => {} }));
    if (this.db.isInTransaction()) await this.db.exec("ROLLBACK"); // exec takes the lock itself
    this.owner = null;
    void this.drain();
  }

  private next(): Pending | undefined {
    const index = this.owner === null ? 0 : this.queue.findIndex((p) => p.handlerId === this.owner);
    return index < 0 ? undefined : this.queue.splice(index, 1)[0];
  }

  private async drain(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      for (let item = this.next(); item; item = this.next()) {
        this.owner = item.handlerId;
        let bytes = 0;
        try {
          await this.db.runExclusive(() =>
            this.db.execProtocolRawStream(item.message, {
              onRawData: (data) => {
                bytes += data.length;
                item.onData(data);
              },
            }),
          );
          if (endsExchange(item.message) && !this.db.isInTransaction()) this.owner = null;
          item.resolve(bytes);
        } catch (error) {
          item.reject(error as Error);
        }
      }
    } finally {
      this.running = false;
    }
  }
}

export interface EmbeddedServer {
  /** The directory holding the socket file: pg's `host`. */
  socketDir: string;
  stop(): Promise<void>;
}

/**
 * Serves `db` on a Unix socket in `socketDir`, which is made readable by this user only: the
 * file system is the authentication (no TCP port, nothing reachable from another user or host).
 */
export async function serveEmbedded(db: PGlite, socketDir: string): Promise<EmbeddedServer> {
  await rm(socketDir, { recursive: true, force: true });
  await mkdir(socketDir, { recursive: true, mode: 0o700 });
  await chmod(socketDir, 0o700);
  const queue = new SessionQueue(db);
  const handlers = new Set<PGLiteSocketHandler>();
  const server: Server = createServer((socket: Socket) => {
    const handler = new PGLiteSocketHandler({
      queryQueue: queue as unknown as PGLiteSocketHandlerOptions["queryQueue"],
      closeOnDetach: true,
    });
    handlers.add(handler);
    const forget = () => handlers.delete(handler);
    handler.addEventListener("close", forget);
    handler.addEventListener("error", forget);
    void handler.attach(socket).catch(() => socket.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path.join(socketDir, `.s.PGSQL.${SOCKET_PORT}`), () => resolve());
  });
  return {
    socketDir,
    async stop() {
      await Promise.all([...handlers].map((h) => h.detach(true)));
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(socketDir, { recursive: true, force: true });
    },
  };
}
