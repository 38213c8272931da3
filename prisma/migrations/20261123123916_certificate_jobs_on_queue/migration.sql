-- DropIndex
DROP INDEX "CertificateJob_state_runAfter_idx";

-- AlterTable
ALTER TABLE "CertificateJob" DROP COLUMN "leaseToken",
DROP COLUMN "leaseUntil",
DROP COLUMN "runAfter",
ADD COLUMN     "generation" INTEGER NOT NULL DEFAULT 0;

-- Certificate jobs left unfinished by the old worker continue as queue jobs (their attempts count).
INSERT INTO "Job" ("kind", "payload", "attempts", "dedupeKey")
SELECT 'certificate', jsonb_build_object('domainId', "domainId"::text, 'generation', 0), "attempts", 'certificate:' || "domainId"::text || ':0'
FROM "CertificateJob" WHERE "state" <> 'finished'
ON CONFLICT ("dedupeKey") DO NOTHING;
UPDATE "CertificateJob" SET "state" = 'queued' WHERE "state" = 'running';
