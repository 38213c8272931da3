// LeadOperation: tags and assignees of a dataset's leads.
import type { components } from "../../generated/openapi.ts";
import type { Db } from "../db/database.ts";
import { Invalid, NotFound } from "../domain/errors.ts";
import type { WithDefaults } from "../domain/types.ts";
import { assignLead, updateTags as updateLeadTags } from "../tracking/write/lead-store.ts";
import * as segmentEntries from "./segment-entries.ts";
import type { SegmentEntryDeps } from "./segment-entries.ts";
import * as access from "./access.ts";
import { normaliseTags } from "./tags.ts";

type Schemas = components["schemas"];
export type LeadTagsUpdate = WithDefaults<Schemas["LeadTagsUpdateRequest"]>;
export type LeadAssignment = Schemas["LeadAssignRequest"];

const leadNotFound = (datasetId: string, leadId: string) => new NotFound(`Dataset ${datasetId} has no lead ${leadId}`);

/** The tags to add and remove, normalised; 400 for bad tags or a tag in both lists. */
function tagChanges(update: LeadTagsUpdate): { add: string[]; remove: string[] } {
  const add = normaliseTags(update.add, { location: "body", field: "add" });
  const remove = normaliseTags(update.remove, { location: "body", field: "remove" });
  const problems = [...add.problems, ...remove.problems];
  const both = add.tags.filter((tag) => remove.tags.includes(tag));
  if (both.length) problems.push({ location: "body", field: "remove", message: `tags both added and removed: ${both.join(", ")}` });
  if (problems.length) throw new Invalid("Invalid request: the tags cannot be applied", problems);
  return { add: add.tags, remove: remove.tags };
}

export interface LeadOperationDeps extends SegmentEntryDeps {
  db: Db;
}

/** Adds and removes tags (one UPDATE: concurrent changes are not lost); repeating a request changes nothing. */
export async function updateTags(deps: LeadOperationDeps, accountId: string, update: LeadTagsUpdate): Promise<void> {
  const { add, remove } = tagChanges(update);
  await access.dataset(deps, accountId, update.datasetId);
  const updated = await deps.db.$transaction(async (tx) => {
    const count = await updateLeadTags(tx, { accountId, datasetId: update.datasetId, leadId: update.leadId }, add, remove);
    // a tag may make the lead match a segment
    if (count) await segmentEntries.evaluate(deps, tx, { accountId, datasetId: update.datasetId, leadIds: [update.leadId] });
    return count;
  });
  if (updated === 0) throw leadNotFound(update.datasetId, update.leadId);
  segmentEntries.committed(deps);
}

/** Makes a member who reaches the dataset the lead's assignee. */
export async function assign(deps: LeadOperationDeps, accountId: string, { datasetId, leadId, assigneeUserId }: LeadAssignment): Promise<void> {
  await access.dataset(deps, accountId, datasetId);
  const lead = await deps.db.lead.findFirst({ where: { accountId, datasetId, id: leadId }, select: { id: true } });
  if (!lead) throw leadNotFound(datasetId, leadId);
  await access.member(deps, accountId, assigneeUserId);
  await access.requireReach(deps, accountId, datasetId, [assigneeUserId]);
  await deps.db.$transaction(async (tx) => {
    await assignLead(tx, { accountId, datasetId, leadId }, BigInt(assigneeUserId));
    // an assignment may make the lead match a segment (assigneeUserId filters)
    await segmentEntries.evaluate(deps, tx, { accountId, datasetId, leadIds: [leadId] });
  });
  segmentEntries.committed(deps);
}
