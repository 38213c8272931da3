-- The ingest queue holds batches (one row per /collect request) instead of single events.

-- CreateTable
CREATE TABLE "IngestQueue" (
    "id" BIGSERIAL NOT NULL,
    "accountId" TEXT NOT NULL,
    "datasetId" TEXT NOT NULL,
    "receivedAt" TIMESTAMPTZ(3) NOT NULL,
    "batch" JSONB NOT NULL,

    CONSTRAINT "IngestQueue_pkey" PRIMARY KEY ("id")
);

-- AddForeignKey
ALTER TABLE "IngestQueue" ADD CONSTRAINT "IngestQueue_accountId_datasetId_fkey" FOREIGN KEY ("accountId", "datasetId") REFERENCES "Dataset"("accountId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Events still queued by the version before: a batch of one each, in their order (nothing accepted is lost).
INSERT INTO "IngestQueue" ("accountId", "datasetId", "receivedAt", "batch")
SELECT "accountId", "datasetId", "receivedAt",
       jsonb_build_object('accountId', "accountId", 'datasetId', "datasetId", 'at', event->'at', 'enrich', event->'enrich',
                          'network', event->'network', 'events', jsonb_build_array(event - 'at' - 'enrich' - 'network'))
FROM "IngestEvent" ORDER BY id;

-- DropForeignKey
ALTER TABLE "IngestEvent" DROP CONSTRAINT "IngestEvent_accountId_datasetId_fkey";

-- DropTable
DROP TABLE "IngestEvent";
