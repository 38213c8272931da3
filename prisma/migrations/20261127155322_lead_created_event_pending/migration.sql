-- lead.created is owed for a lead an exclusion rule hid when it was first seen: it is published
-- before the lead's first event once no rule hides it (server/notify/events.ts).

-- AlterTable
ALTER TABLE "Lead" ADD COLUMN     "createdEventPending" BOOLEAN NOT NULL DEFAULT false;

-- The leads a rule hides now may never have had their lead.created: owe it (a consumer may get it
-- twice, deduplicating by leadId, rather than never).
UPDATE "Lead" l SET "createdEventPending" = true
WHERE EXISTS (
  SELECT 1 FROM "DatasetExclusion" e
  WHERE e."datasetId" = l."datasetId"
    AND ((e."type" = 'use_id' AND e."valueKey" = l."id")
      OR (e."type" = 'organizationName' AND e."valueKey" = lower(l."organizationName"))
      OR (e."type" = 'organizationDomain' AND e."valueKey" = lower(l."organizationDomain"))));
