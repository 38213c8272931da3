// The operator's dead-letter commands (`npm run admin -- dead-letters list|replay|drop`): list what
// waits in the dead-letter table, replay a batch into the ingest log the writers read now, or drop
// it. What each does to the table: dead-letters.ts, its only writer.
import type { Config } from "../../config.ts";
import type { Db } from "../../db/database.ts";
import { NotFound } from "../../domain/errors.ts";
import { createLogger } from "../../logging.ts";
import { type DeadLetter, type DeadLetterSelection, dropDeadLetter, listDeadLetters, type ReplayedLetters, replayDeadLetter, replayDeadLetters } from "./dead-letters.ts";
import { openIngestLog } from "./ingest-log.ts";

/** The dead letters as lines for a terminal. */
export function formatDeadLetters(letters: readonly DeadLetter[]): string {
  if (!letters.length) return "no dead letters";
  return letters
    .map((l) => `${l.id}  ${l.log}  ${l.datasetId ?? "-"}  ${l.events} events  ${l.attempts} tries  failed ${l.failedAt.toISOString()}  ${l.error}`)
    .join("\n");
}

export type DeadLetterAction = "list" | "replay" | "drop";

/** What a dead-letter command acts on: one letter by its id, or (list, replay --all) a selection. */
export interface DeadLetterTarget extends DeadLetterSelection {
  id?: string;
}

/** An operator command's result: its data (for --json), its text, and whether it left letters it was asked to replay. */
export interface DeadLetterOutcome {
  data: unknown;
  text: string;
  incomplete?: boolean;
}

/** An operator command (scripts/admin.ts): `list`, `drop` of one id, `replay` of one id or of a selection. */
export async function deadLetterCommand(
  db: Db,
  config: Pick<Config, "ingestLog" | "logLevel">,
  action: DeadLetterAction,
  { id, ...selection }: DeadLetterTarget,
): Promise<DeadLetterOutcome> {
  if (action === "list") {
    const letters = await listDeadLetters(db, selection);
    return { data: letters, text: formatDeadLetters(letters) };
  }
  if (action === "drop") {
    if (!(await dropDeadLetter(db, id ?? ""))) throw new NotFound(`no dead letter ${id}`);
    return { data: { id, dropped: true }, text: `dead letter ${id} dropped` };
  }
  // the log the writers read now (INGEST_LOG_URL), whichever log the batch came from
  const log = await openIngestLog(db, config.ingestLog, createLogger(config.logLevel === "silent" ? "silent" : "warn"));
  try {
    return id === undefined ? replayedText(await replayDeadLetters(db, log, selection), log.kind) : replayedOne(await replayDeadLetter(db, log, id), id, log.kind);
  } finally {
    await log.close();
  }
}

const replayedOne = (replayed: { batches: number; events: number }, id: string, kind: string): DeadLetterOutcome => ({
  data: { id, ...replayed, log: kind },
  text: `dead letter ${id}: ${replayed.events} events in ${replayed.batches} batches put back into the ingest log (${kind}) and removed from the dead-letter table`,
});

function replayedText({ replayed, left }: ReplayedLetters, kind: string): DeadLetterOutcome {
  const events = replayed.reduce((n, r) => n + r.events, 0);
  const lines = [
    `${replayed.length} dead letters (${events} events) put back into the ingest log (${kind}) and removed from the dead-letter table` +
      (replayed.length ? `: ${replayed.map((r) => r.id).join(", ")}` : ""),
    ...left.map((l) => l.reason),
  ];
  if (left.length) lines.push(`${left.length} left in the dead-letter table`);
  return { data: { replayed, left, log: kind }, text: lines.join("\n"), incomplete: left.length > 0 };
}
