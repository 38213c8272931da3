// The ingest log on NATS JetStream (INGEST_LOG_URL=nats://...).
// - The stream: work-queue retention (a message is removed once a writer acknowledged it), file
//   storage, INGEST_LOG_REPLICAS copies, bounded by INGEST_LOG_MAX_AGE_HOURS and
//   INGEST_LOG_MAX_BYTES with "discard new": a full stream refuses batches (the collector answers
//   503) instead of dropping acknowledged ones. Created when missing; its limits follow the
//   configuration at every start.
// - A collector's batch is one message, published with a message id (Nats-Msg-Id: JetStream drops
//   a repeat within its duplicate window); the collector answers 202 only after the stream's
//   acknowledgement, 503 with Retry-After when it is not connected or the acknowledgement fails.
// - Writers share one durable pull consumer (explicit acknowledgement). A writer fetches up to
//   a batch of messages, writes their events in one transaction together with their message ids
//   ("IngestedBatch", ON CONFLICT DO NOTHING), and acknowledges them after the commit. A message
//   redelivered because its writer died between commit and acknowledgement finds its id and
//   writes nothing; one whose writer died before the commit is written by the next writer.
import { randomUUID } from "node:crypto";
import {
  AckPolicy,
  type Consumer,
  DeliverPolicy,
  DiscardPolicy,
  jetstream,
  type JetStreamClient,
  type JetStreamManager,
  jetstreamManager,
  type JsMsg,
  RetentionPolicy,
  StorageType,
  JetStreamApiCodes,
  JetStreamApiError,
} from "@nats-io/jetstream";
import { connect, nanos, type NatsConnection } from "@nats-io/transport-node";
import type { Db } from "../db/database.ts";
import { Unavailable } from "../domain/errors.ts";
import type { Logger } from "../logging.ts";
import { BATCH_TRANSACTION_MS, entrySizer, type IngestLog, type IngestResult, type QueueRow, writeEvents, type WriterHooks } from "./ingest.ts";
import { rowsOfLogged } from "./events.ts";
import type { IngestLogConfig } from "../config.ts";

/** The wait a 503 announces: a NATS server's restart or a cluster's new leader is rarely quicker. */
export const LOG_RETRY_AFTER_SECONDS = 2;
/** A repeated publish (same message id) within this is dropped by the stream. */
const DUPLICATE_WINDOW_MS = 2 * 60_000;
/** The shortest pull the client library allows: how long a writer waits for redeliveries. */
const FETCH_EXPIRES_MS = 1_000;
/** How long a batch whose transaction failed waits before it is delivered again. */
const NAK_DELAY_MS = 1_000;
/** How often a writer prunes the message ids it no longer needs. */
const PRUNE_EVERY_MS = 60_000;
/** How long the id of a message whose acknowledgement was confirmed is kept (at least). */
const ACKNOWLEDGED_KEEP_MS = 10 * 60_000;

const unavailable = (why: string) =>
  new Unavailable(`The ingest log did not store the batch (${why}): nothing was accepted; retry after the Retry-After seconds`, LOG_RETRY_AFTER_SECONDS);

const isApiError = (error: unknown, code: number) => error instanceof JetStreamApiError && error.code === code;

async function ensureStream(jsm: JetStreamManager, config: IngestLogConfig): Promise<void> {
  const limits = {
    subjects: [config.subject],
    num_replicas: config.replicas,
    max_age: nanos(config.maxAgeHours * 3_600_000),
    max_bytes: config.maxBytes,
    discard: DiscardPolicy.New,
    duplicate_window: nanos(Math.min(DUPLICATE_WINDOW_MS, config.maxAgeHours * 3_600_000)),
  };
  try {
    await jsm.streams.info(config.stream);
    await jsm.streams.update(config.stream, limits);
  } catch (error) {
    if (!isApiError(error, JetStreamApiCodes.StreamNotFound)) throw error;
    await jsm.streams.add({ name: config.stream, retention: RetentionPolicy.Workqueue, storage: StorageType.File, ...limits });
  }
}

async function ensureConsumer(jsm: JetStreamManager, config: IngestLogConfig): Promise<void> {
  const settings = { ack_wait: nanos(config.ackWaitSeconds * 1000), max_ack_pending: 20_000 };
  try {
    await jsm.consumers.info(config.stream, config.consumer);
    await jsm.consumers.update(config.stream, config.consumer, settings);
  } catch (error) {
    if (!isApiError(error, JetStreamApiCodes.ConsumerNotFound)) throw error;
    await jsm.consumers.add(config.stream, {
      durable_name: config.consumer,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      max_deliver: -1,
      ...settings,
    });
  }
}

/** A message's events and id (the collector's Nats-Msg-Id; the stream sequence for a message without one). */
function readMessage(msg: JsMsg, stream: string): { id: string; rows: QueueRow[] } {
  const rows = rowsOfLogged(msg.json());
  return { id: msg.headers?.get("Nats-Msg-Id") || `${stream}:${msg.seq}`, rows };
}

export async function openJetStreamLog(db: Db, config: IngestLogConfig, logger: Logger): Promise<IngestLog> {
  let nc: NatsConnection;
  try {
    // noAsyncTraces: no Error (a stack trace) made per publish and acknowledgement; only messages are logged
    nc = await connect({ servers: config.servers, name: "lead-intel-ingest", maxReconnectAttempts: -1, reconnectTimeWait: 500, timeout: config.timeoutMs * 2, noAsyncTraces: true });
  } catch (error) {
    throw new Error(`the ingest log (INGEST_LOG_URL) did not answer: ${(error as Error).message}`);
  }
  const jsm = await jetstreamManager(nc, { timeout: config.timeoutMs * 2 });
  await ensureStream(jsm, config);
  await ensureConsumer(jsm, config);
  const js: JetStreamClient = jetstream(nc, { timeout: config.timeoutMs });
  let connected = true;
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "disconnect") {
        connected = false;
        logger.warn("ingest log disconnected: the collector answers 503 until it is back");
      } else if (status.type === "reconnect") {
        connected = true;
        logger.info("ingest log reconnected");
      }
    }
  })();
  let consumer: Consumer | undefined;
  let prunedAt = 0;
  // messages per transaction: about `limit` events, as many as the last fetch's messages carried
  const sizer = entrySizer();

  /** Up to `max` messages: what waits, or (when only delivered ones are unacknowledged) redeliveries within a second. */
  async function fetchMessages(max: number): Promise<JsMsg[]> {
    consumer ??= await js.consumers.get(config.stream, config.consumer);
    const info = await consumer.info();
    if (!info.num_pending && !info.num_ack_pending) return [];
    const batch = await consumer.fetch({ max_messages: info.num_pending ? Math.min(max, info.num_pending) : max, expires: FETCH_EXPIRES_MS });
    const messages: JsMsg[] = [];
    for await (const msg of batch) messages.push(msg);
    return messages;
  }

  /** Forgets message ids that cannot come back: acknowledged (confirmed) a while ago, or older than the stream's max age. */
  async function pruneWrittenIds(): Promise<void> {
    if (Date.now() - prunedAt < PRUNE_EVERY_MS) return;
    prunedAt = Date.now();
    // a confirmed message is gone from the stream; the margin covers a redelivery already in a
    // writer's hands when the acknowledgement came (its transaction waits for this one's commit)
    const acknowledgedBefore = new Date(Date.now() - Math.max(ACKNOWLEDGED_KEEP_MS, 4 * config.ackWaitSeconds * 1000));
    const writtenBefore = new Date(Date.now() - config.maxAgeHours * 3_600_000 - DUPLICATE_WINDOW_MS);
    await db.$executeRaw`DELETE FROM "IngestedBatch" WHERE "acknowledgedAt" < ${acknowledgedBefore} OR "writtenAt" < ${writtenBefore}`;
  }

  return {
    kind: "jetstream",
    async append(batches) {
      if (!batches.length) return;
      if (!connected) throw unavailable("not connected");
      try {
        await js.publish(config.subject, JSON.stringify(batches), { msgID: randomUUID(), timeout: config.timeoutMs });
      } catch (error) {
        throw unavailable((error as Error).message);
      }
    },

    async writeBatch(limit: number, hooks: WriterHooks): Promise<IngestResult | undefined> {
      const messages = await fetchMessages(sizer.entriesFor(limit));
      if (!messages.length) return undefined;
      const byId = new Map<string, QueueRow[]>();
      const readable: { msg: JsMsg; id: string }[] = [];
      for (const msg of messages) {
        try {
          const { id, rows } = readMessage(msg, config.stream);
          byId.set(id, rows);
          readable.push({ msg, id });
        } catch {
          logger.error("ingest log message is not a batch: dropped", { stream: config.stream, seq: msg.seq });
          msg.term("not a batch");
        }
      }
      sizer.observe(byId.size, [...byId.values()].reduce((sum, rows) => sum + rows.length, 0));
      let result: IngestResult | undefined;
      try {
        result = await db.$transaction(
          async (tx) => {
            const ids = JSON.stringify([...byId.keys()]);
            const fresh = await tx.$queryRaw<{ id: string }[]>`
              INSERT INTO "IngestedBatch" ("id") SELECT jsonb_array_elements_text(${ids}::jsonb)
              ON CONFLICT DO NOTHING RETURNING "id"`;
            const events = fresh.flatMap(({ id }) => byId.get(id) ?? []);
            // every message was written before (redelivered after its writer's commit): nothing to write
            return writeEvents(tx, events, hooks);
          },
          { timeout: BATCH_TRANSACTION_MS },
        );
      } catch (error) {
        // back to the stream, for this or another writer, after a pause (a database outage is rarely shorter)
        for (const { msg } of readable) msg.nak(NAK_DELAY_MS);
        throw error;
      }
      // after the commit: a lost acknowledgement means a redelivery, which the ids make harmless
      const confirmed = await Promise.all(
        readable.map(({ msg, id }) =>
          msg.ackAck().then(
            (acknowledged) => (acknowledged ? id : undefined),
            (error: Error) => {
              logger.warn("ingest log acknowledgement failed; the batch will be redelivered and skipped", { error: error.message });
              return undefined;
            },
          ),
        ),
      );
      const ids = JSON.stringify(confirmed.filter((id) => id !== undefined));
      await db.$executeRaw`UPDATE "IngestedBatch" SET "acknowledgedAt" = now() WHERE id IN (SELECT jsonb_array_elements_text(${ids}::jsonb))`;
      await pruneWrittenIds();
      return result;
    },

    async oldestUnwritten() {
      const { state } = await jsm.streams.info(config.stream);
      return state.messages ? new Date(state.first_ts) : undefined;
    },

    async close() {
      await nc.drain().catch(() => nc.close());
    },
  };
}
