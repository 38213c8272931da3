-- CreateTable
CREATE TABLE "PendingEvent" (
    "id" BIGSERIAL NOT NULL,
    "accountId" TEXT NOT NULL,
    "datasetId" TEXT NOT NULL,
    "ip" TEXT NOT NULL,
    "range" TEXT NOT NULL,
    "networkType" TEXT NOT NULL,
    "masked" BOOLEAN NOT NULL DEFAULT false,
    "visitorId" TEXT NOT NULL,
    "receivedAt" TIMESTAMPTZ(3) NOT NULL,
    "event" JSONB NOT NULL,

    CONSTRAINT "PendingEvent_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "PendingEvent_accountId_range_idx" ON "PendingEvent"("accountId", "range");

-- CreateIndex
CREATE INDEX "PendingEvent_datasetId_visitorId_idx" ON "PendingEvent"("datasetId", "visitorId");

-- CreateIndex
CREATE INDEX "PendingEvent_receivedAt_idx" ON "PendingEvent"("receivedAt");

-- AddForeignKey
ALTER TABLE "PendingEvent" ADD CONSTRAINT "PendingEvent_accountId_datasetId_fkey" FOREIGN KEY ("accountId", "datasetId") REFERENCES "Dataset"("accountId", "id") ON DELETE CASCADE ON UPDATE CASCADE;
