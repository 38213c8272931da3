-- When visits come from an address, per UTC hour: the around-the-clock rule (server/identity/rules.ts AROUND_THE_CLOCK).
-- CreateTable
CREATE TABLE "AddressActivity" (
    "unit" TEXT NOT NULL,
    "hour" SMALLINT NOT NULL,
    "visits" INTEGER NOT NULL,
    "lastSeenAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "AddressActivity_pkey" PRIMARY KEY ("unit","hour")
);

-- CreateIndex
CREATE INDEX "AddressActivity_lastSeenAt_idx" ON "AddressActivity"("lastSeenAt");
