// The ingest log on NATS JetStream (INGEST_LOG_URL=nats://...).
// - The stream: work-queue retention (a message is removed once a writer acknowledged it), file
//   storage, INGEST_LOG_REPLICAS copies, bounded by INGEST_LOG_MAX_AGE_HOURS and
//   INGEST_LOG_MAX_BYTES with "discard new": a full stream refuses batches (the collector answers
//   503) instead of dropping acknowledged ones. Created when missing; its limits follow the
//   configuration at every start.
// - A collector's batch is one message, published with a message id (Nats-Msg-Id: JetStream drops
//   a repeat within its duplicate window); the collector answers 202 only after the stream's
//   acknowledgement. A publish not acknowledged (not connected, a timeout, a cluster electing a
//   stream leader) is tried again with the same id for up to INGEST_LOG_RETRY_MS; then 503 with
//   Retry-After.
// - Writers share one durable pull consumer (explicit acknowledgement). A writer fetches up to
//   a batch of messages, writes their events in one transaction together with their message ids
//   ("IngestedBatch", ON CONFLICT DO NOTHING), and acknowledges them after the commit. A message
//   redelivered because its writer died between commit and acknowledgement finds its id and
//   writes nothing; one whose writer died before the commit is written by the next writer. One
//   the database refuses is isolated, split per request, and set aside after INGEST_MAX_ATTEMPTS
//   deliveries (isolation.ts).
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
import type { Db } from "../../db/database.ts";
import { faultText } from "../../db/errors.ts";
import { Unavailable } from "../../domain/errors.ts";
import type { Logger } from "../../logging.ts";
import { writeEvents } from "../write/batch.ts";
import { EMPTY_RESULT, type IngestResult, mergedResults } from "../write/write-result.ts";
import { MalformedBatch, NOT_JSON, type QueuedBatch, type QueueRow, rowsOfLogged } from "../collect/events.ts";
import { BATCH_TRANSACTION_MS, entrySizer, type IngestLog, type WriteOptions } from "./log-interface.ts";
import { insertDeadLetters, type NewDeadLetter } from "./dead-letters.ts";
import { DEFAULT_MAX_ATTEMPTS, eventsIn, failedWrite, isolate } from "./isolation.ts";
import { trackingMetrics } from "../collect/metrics.ts";
import type { IngestLogConfig } from "../../config.ts";

/** The wait a 503 announces: a NATS server's restart or a cluster's new leader is rarely quicker. */
export const LOG_RETRY_AFTER_SECONDS = 2;
/** A repeated publish (same message id) within this is dropped by the stream. */
const DUPLICATE_WINDOW_MS = 2 * 60_000;
/** The shortest pull the client library allows: how long a writer waits for redeliveries. */
const FETCH_EXPIRES_MS = 1_000;
/** How long a batch whose transaction failed waits before it is delivered again. */
const NAK_DELAY_MS = 1_000;
/** The first and the longest pause between tries of a publish the stream did not acknowledge. */
const FIRST_PUBLISH_PAUSE_MS = 100;
const MAX_PUBLISH_PAUSE_MS = 1_000;
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

/** A fetched message, read: its id (the collector's Nats-Msg-Id; stream:sequence without one), what it holds, its events. */
interface Entry {
  msg: JsMsg;
  id: string;
  /** The payload: an array of batches (or of an older version's event rows). */
  entries: unknown[];
  rows: QueueRow[];
  /** Acknowledged, sent back (nak), split or set aside: nothing more to do with it. */
  settled: boolean;
}

const messageId = (msg: JsMsg, stream: string) => msg.headers?.get("Nats-Msg-Id") || `${stream}:${msg.seq}`;

/** A message's events; MalformedBatch when it is not JSON or not a batch. */
function readMessage(msg: JsMsg, stream: string): Entry {
  let payload: unknown;
  try {
    payload = msg.json();
  } catch {
    throw new MalformedBatch(NOT_JSON);
  }
  const rows = rowsOfLogged(payload);
  return { msg, id: messageId(msg, stream), entries: payload as unknown[], rows, settled: false };
}

/** What a message held, for the dead-letter table: its JSON, or its text as a JSON string. */
function payloadOf(msg: JsMsg): unknown {
  try {
    return msg.json();
  } catch {
    return msg.string();
  }
}

/** A message as a dead letter (one batch, or a payload that could not be read). */
function messageDeadLetter(msg: JsMsg, id: string, error: string): NewDeadLetter {
  const payload = payloadOf(msg);
  const [first] = Array.isArray(payload) ? payload : [];
  const batch = (typeof first === "object" && first !== null ? first : {}) as Record<string, unknown>;
  const text = (value: unknown) => (typeof value === "string" ? value : null);
  const at = text(batch.at) ?? text(batch.receivedAt);
  return {
    log: "jetstream",
    messageId: id,
    accountId: text(batch.accountId),
    datasetId: text(batch.datasetId),
    receivedAt: at && !Number.isNaN(Date.parse(at)) ? new Date(at).toISOString() : null,
    attempts: msg.info.deliveryCount,
    error,
    payload,
    events: eventsIn(payload),
  };
}

/** Whether a failed publish may pass on retry: anything but the stream's own refusal (full, too large). */
const mayRetryPublish = (error: unknown) => !(error instanceof JetStreamApiError) || error.status === 503;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Connects to the servers of `config`; a clear error when none answers. */
async function connectTo(config: IngestLogConfig): Promise<NatsConnection> {
  try {
    // noAsyncTraces: no Error (a stack trace) made per publish and acknowledgement; only messages are logged
    return await connect({ servers: config.servers, name: "lead-intel-ingest", maxReconnectAttempts: -1, reconnectTimeWait: 500, timeout: config.timeoutMs * 2, noAsyncTraces: true });
  } catch (error) {
    throw new Error(`the ingest log (INGEST_LOG_URL) did not answer: ${(error as Error).message}`);
  }
}

/** Opens the JetStream log of `config`: connects, and makes (or brings to the configuration) its stream and consumer. */
export async function openJetStreamLog(db: Db, config: IngestLogConfig, logger: Logger): Promise<JetStreamLog> {
  const nc = await connectTo(config);
  try {
    const jsm = await jetstreamManager(nc, { timeout: config.timeoutMs * 2 });
    await ensureStream(jsm, config);
    await ensureConsumer(jsm, config);
    return new JetStreamLog(db, config, logger, nc, jsm);
  } catch (error) {
    // not left reconnecting: the caller gives up or opens another
    await nc.close();
    throw error;
  }
}

/** The ingest log on an open connection: what the collector appends to and the writers write from. */
export class JetStreamLog implements IngestLog {
  readonly kind = "jetstream";
  private readonly js: JetStreamClient;
  /** Connected to a server now (a disconnect makes appends wait or fail at once). */
  private connected = true;
  /** The writers' durable consumer, looked up at the first fetch. */
  private consumer: Consumer | undefined;
  /** An append used up its tries and none has been acknowledged since. */
  private appendsFailing = false;
  private prunedAt = 0;
  /** Messages per transaction: about `limit` events, as many as the last fetch's messages carried. */
  private readonly sizer = entrySizer();

  constructor(
    private readonly db: Db,
    private readonly config: IngestLogConfig,
    private readonly logger: Logger,
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
  ) {
    this.js = jetstream(nc, { timeout: config.timeoutMs });
    void this.followStatus();
  }

  /** Keeps `connected` as the connection's status says, and logs the changes. */
  private async followStatus(): Promise<void> {
    for await (const status of this.nc.status()) {
      if (status.type === "disconnect") {
        this.connected = false;
        this.logger.warn("ingest log disconnected: the collector answers 503 until it is back");
      } else if (status.type === "reconnect") {
        this.connected = true;
        this.logger.info("ingest log reconnected");
      }
    }
  }

  /**
   * One publish, tried again (same message id: the stream stores it once) while it fails for a
   * reason that passes (not connected, no acknowledgement in time, no stream leader: a cluster
   * electing one) until INGEST_LOG_RETRY_MS have passed; then Unavailable (the collector's 503).
   * Once an append has used up its tries, the next ones get one try each until one is
   * acknowledged: a long outage answers at once instead of holding every request.
   */
  async append(batches: readonly QueuedBatch[], id: string = randomUUID()): Promise<void> {
    if (!batches.length) return;
    const payload = JSON.stringify(batches);
    const deadline = performance.now() + (this.appendsFailing ? 0 : this.config.retryMs);
    try {
      await this.publishUntil(payload, id, deadline);
      this.appendsFailing = false;
    } catch (error) {
      this.appendsFailing = true;
      throw error;
    }
  }

  /** Publishes `payload` under `id`, trying again until `deadline` while the failure may pass; Unavailable when it does not. */
  private async publishUntil(payload: string, id: string, deadline: number): Promise<void> {
    const { subject, timeoutMs } = this.config;
    for (let wait = FIRST_PUBLISH_PAUSE_MS, tries = 0; ; wait = Math.min(wait * 2, MAX_PUBLISH_PAUSE_MS), tries++) {
      let why = "not connected";
      if (this.connected) {
        // the first try waits INGEST_LOG_TIMEOUT_MS; the others no later than the bound
        const timeout = tries ? Math.max(FIRST_PUBLISH_PAUSE_MS, Math.min(timeoutMs, deadline - performance.now())) : timeoutMs;
        try {
          await this.js.publish(subject, payload, { msgID: id, timeout });
          return;
        } catch (error) {
          why = (error as Error).message;
          if (!mayRetryPublish(error)) throw unavailable(why);
        }
      }
      const left = deadline - performance.now();
      if (left <= 0) throw unavailable(why);
      await pause(Math.min(wait, left));
    }
  }

  async writeBatch(limit: number, options: WriteOptions): Promise<IngestResult | undefined> {
    const messages = await this.fetchMessages(this.sizer.entriesFor(limit));
    if (!messages.length) return undefined;
    const redelivered = messages.filter((msg) => msg.info.redelivered).length;
    if (redelivered) trackingMetrics.redeliveries.inc(redelivered);
    const { entries, unreadable } = this.readMessages(messages);
    this.sizer.observe(entries.length, entries.reduce((sum, e) => sum + e.rows.length, 0));
    try {
      // no retry reads them: set aside at once
      for (const u of unreadable) {
        await this.setAside(u.msg, messageId(u.msg, this.config.stream), u.error, options);
        u.settled = true;
      }
      if (!entries.length) return EMPTY_RESULT;
      try {
        return await this.writeMessages(entries, options);
      } catch (error) {
        if (failedWrite(error) !== "permanent") throw error;
        const parts = await isolate(entries, (part) => this.writeMessages(part, options), (entry, cause) => this.refused(entry, cause, options), error);
        return mergedResults(parts) ?? EMPTY_RESULT;
      }
    } catch (error) {
      // back to the stream, for this or another writer, after a pause (a database outage is rarely shorter)
      for (const e of [...entries, ...unreadable]) if (!e.settled) e.msg.nak(NAK_DELAY_MS);
      throw error;
    }
  }

  /** Up to `max` messages: what waits, or (when only delivered ones are unacknowledged) redeliveries within a second. */
  private async fetchMessages(max: number): Promise<JsMsg[]> {
    this.consumer ??= await this.js.consumers.get(this.config.stream, this.config.consumer);
    const info = await this.consumer.info();
    if (!info.num_pending && !info.num_ack_pending) return [];
    const batch = await this.consumer.fetch({ max_messages: info.num_pending ? Math.min(max, info.num_pending) : max, expires: FETCH_EXPIRES_MS });
    const messages: JsMsg[] = [];
    for await (const msg of batch) messages.push(msg);
    return messages;
  }

  /** The messages read, and those that cannot be read (with why). */
  private readMessages(messages: readonly JsMsg[]) {
    const entries: Entry[] = [];
    const unreadable: { msg: JsMsg; error: string; settled?: boolean }[] = [];
    for (const msg of messages) {
      try {
        entries.push(readMessage(msg, this.config.stream));
      } catch (error) {
        if (!(error instanceof MalformedBatch)) throw error;
        unreadable.push({ msg, error: error.message });
      }
    }
    return { entries, unreadable };
  }

  /**
   * Writes the messages' events in one transaction, with their ids (a message written before
   * writes nothing), then acknowledges them.
   */
  private async writeMessages(entries: readonly Entry[], hooks: WriteOptions): Promise<IngestResult> {
    const result = await this.db.$transaction(
      async (tx) => {
        const ids = JSON.stringify(entries.map((e) => e.id));
        const fresh = await tx.$queryRaw<{ id: string }[]>`
          INSERT INTO "IngestedBatch" ("id") SELECT jsonb_array_elements_text(${ids}::jsonb)
          ON CONFLICT DO NOTHING RETURNING "id"`;
        const byId = new Map(entries.map((e) => [e.id, e.rows]));
        // every message was written before (redelivered after its writer's commit): nothing to write
        return writeEvents(tx, fresh.flatMap(({ id }) => byId.get(id) ?? []), hooks);
      },
      { timeout: BATCH_TRANSACTION_MS },
    );
    for (const entry of entries) entry.settled = true;
    await this.acknowledge(entries);
    return result;
  }

  /** After the commit: a lost acknowledgement means a redelivery, which the ids make harmless. */
  private async acknowledge(entries: readonly Entry[]): Promise<void> {
    const confirmed = await Promise.all(
      entries.map(({ msg, id }) =>
        msg.ackAck().then(
          (acknowledged) => (acknowledged ? id : undefined),
          (error: Error) => {
            this.logger.warn("ingest log acknowledgement failed; the batch will be redelivered and skipped", { error: error.message });
            return undefined;
          },
        ),
      ),
    );
    const ids = JSON.stringify(confirmed.filter((id) => id !== undefined));
    await this.db.$executeRaw`UPDATE "IngestedBatch" SET "acknowledgedAt" = now() WHERE id IN (SELECT jsonb_array_elements_text(${ids}::jsonb))`;
    await this.pruneWrittenIds();
  }

  /** Forgets message ids that cannot come back: acknowledged (confirmed) a while ago, or older than the stream's max age. */
  private async pruneWrittenIds(): Promise<void> {
    if (Date.now() - this.prunedAt < PRUNE_EVERY_MS) return;
    this.prunedAt = Date.now();
    // a confirmed message is gone from the stream; the margin covers a redelivery already in a
    // writer's hands when the acknowledgement came (its transaction waits for this one's commit)
    const acknowledgedBefore = new Date(Date.now() - Math.max(ACKNOWLEDGED_KEEP_MS, 4 * this.config.ackWaitSeconds * 1000));
    const writtenBefore = new Date(Date.now() - this.config.maxAgeHours * 3_600_000 - DUPLICATE_WINDOW_MS);
    await this.db.$executeRaw`DELETE FROM "IngestedBatch" WHERE "acknowledgedAt" < ${acknowledgedBefore} OR "writtenAt" < ${writtenBefore}`;
  }

  /**
   * A message that failed alone for its data. One of several batches (collectors group requests)
   * is split: each batch published as a message of its own (ids `<id>/<n>`: a repeated split is
   * dropped by the duplicate window), then the message acknowledged, so that the batches fail or
   * pass each on its own. A single batch goes back for another try until it has been delivered
   * `maxAttempts` times, then is set aside.
   */
  private async refused(entry: Entry, error: unknown, options: WriteOptions): Promise<void> {
    const { subject, timeoutMs } = this.config;
    if (entry.entries.length > 1) {
      await Promise.all(entry.entries.map((part, n) => this.js.publish(subject, JSON.stringify([part]), { msgID: `${entry.id}/${n}`, timeout: timeoutMs })));
      entry.settled = true;
      await entry.msg.ackAck().catch(() => false); // not confirmed: it comes back and is split again, to the same ids
    } else if (entry.msg.info.deliveryCount >= (options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS)) {
      await this.setAside(entry.msg, entry.id, faultText(error), options);
      entry.settled = true;
    } else {
      entry.msg.nak(NAK_DELAY_MS);
      entry.settled = true;
    }
  }

  /**
   * Sets a message aside into the dead-letter table with its id among the written ones (a
   * redelivery finds it and writes nothing), then terminates it: the stream delivers it no more
   * and (work-queue retention) removes it. term() without a reason: nats-server 2.9 ignores a
   * termination that carries one, and the message comes back after the acknowledgement wait.
   */
  private async setAside(msg: JsMsg, id: string, error: string, options: WriteOptions): Promise<void> {
    const letters = await this.db.$transaction(async (tx) => {
      const fresh = await tx.$queryRaw<{ id: string }[]>`INSERT INTO "IngestedBatch" ("id") VALUES (${id}) ON CONFLICT DO NOTHING RETURNING "id"`;
      return fresh.length ? insertDeadLetters(tx, [messageDeadLetter(msg, id, error)]) : [];
    });
    msg.term();
    letters.forEach((letter) => options.onDeadLettered?.(letter));
  }

  async oldestUnwritten(): Promise<Date | undefined> {
    const { state } = await this.jsm.streams.info(this.config.stream);
    return state.messages ? new Date(state.first_ts) : undefined;
  }

  async close(): Promise<void> {
    await this.nc.drain().catch(() => this.nc.close());
  }
}
