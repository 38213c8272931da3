-- The ingest log's dead letters: batches the database refused INGEST_MAX_ATTEMPTS times (counted in IngestQueue.attempts on the queue table), or that cannot be read, set aside whole.

-- CreateEnum
CREATE TYPE "IngestLogKind" AS ENUM ('postgres', 'jetstream');

-- AlterTable
ALTER TABLE "IngestQueue" ADD COLUMN     "attempts" INTEGER NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "IngestDeadLetter" (
    "id" BIGSERIAL NOT NULL,
    "log" "IngestLogKind" NOT NULL,
    "messageId" TEXT,
    "accountId" TEXT,
    "datasetId" TEXT,
    "receivedAt" TIMESTAMPTZ(3),
    "failedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "attempts" INTEGER NOT NULL,
    "error" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "events" INTEGER NOT NULL,

    CONSTRAINT "IngestDeadLetter_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "IngestDeadLetter_failedAt_idx" ON "IngestDeadLetter"("failedAt");
