// LeadOperation: tags and assignees of a dataset's leads.
import type { components } from "../../generated/openapi.ts";
import type { Db } from "../db/database.ts";
import { Invalid, NotFound } from "../domain/errors.ts";
import type { WithDefaults } from "../domain/types.ts";
import { assignLead, updateTags } from "../tracking/write/lead-store.ts";
import type { SegmentEntryService } from "./segment-entries.ts";
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

export function leadOperationService(db: Db, entries: SegmentEntryService) {
  return {
    /** Adds and removes tags (one UPDATE: concurrent changes are not lost); repeating a request changes nothing. */
    async updateTags(accountId: string, update: LeadTagsUpdate): Promise<void> {
      const { add, remove } = tagChanges(update);
      await access.dataset({ db }, accountId, update.datasetId);
      const updated = await db.$transaction(async (tx) => {
        const count = await updateTags(tx, { accountId, datasetId: update.datasetId, leadId: update.leadId }, add, remove);
        // a tag may make the lead match a segment
        if (count) await entries.evaluate(tx, { accountId, datasetId: update.datasetId, leadIds: [update.leadId] });
        return count;
      });
      if (updated === 0) throw leadNotFound(update.datasetId, update.leadId);
      entries.committed();
    },

    /** Makes a member who reaches the dataset the lead's assignee. */
    async assign(accountId: string, { datasetId, leadId, assigneeUserId }: LeadAssignment): Promise<void> {
      await access.dataset({ db }, accountId, datasetId);
      const lead = await db.lead.findFirst({ where: { accountId, datasetId, id: leadId }, select: { id: true } });
      if (!lead) throw leadNotFound(datasetId, leadId);
      await access.member({ db }, accountId, assigneeUserId);
      await access.requireReach({ db }, accountId, datasetId, [assigneeUserId]);
      await db.$transaction(async (tx) => {
        await assignLead(tx, { accountId, datasetId, leadId }, BigInt(assigneeUserId));
        // an assignment may make the lead match a segment (assigneeUserId filters)
        await entries.evaluate(tx, { accountId, datasetId, leadIds: [leadId] });
      });
      entries.committed();
    },
  };
}
