-- AlterTable
ALTER TABLE "Dataset" ADD COLUMN     "monthlyCreditLimit" INTEGER NOT NULL DEFAULT 1000;

-- CreateTable
CREATE TABLE "Contact" (
    "email" TEXT NOT NULL,
    "fullName" TEXT NOT NULL,
    "headline" TEXT,
    "linkedinUrl" TEXT,
    "seniority" TEXT,
    "jobFunction" TEXT,
    "location" TEXT,
    "languages" JSONB NOT NULL DEFAULT '[]',
    "experience" JSONB NOT NULL DEFAULT '[]',

    CONSTRAINT "Contact_pkey" PRIMARY KEY ("email")
);

-- CreateTable
CREATE TABLE "CreditUsage" (
    "datasetId" TEXT NOT NULL,
    "month" DATE NOT NULL,
    "used" INTEGER NOT NULL,

    CONSTRAINT "CreditUsage_pkey" PRIMARY KEY ("datasetId","month")
);

-- CreateTable
CREATE TABLE "CreditLedgerEntry" (
    "id" BIGSERIAL NOT NULL,
    "accountId" TEXT NOT NULL,
    "datasetId" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL,
    "credits" INTEGER NOT NULL,
    "operation" TEXT NOT NULL,
    "keyId" TEXT NOT NULL,

    CONSTRAINT "CreditLedgerEntry_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "IdempotencyKey" (
    "accountId" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "owner" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL,
    "status" INTEGER,
    "body" TEXT,

    CONSTRAINT "IdempotencyKey_pkey" PRIMARY KEY ("accountId","key")
);

-- CreateIndex
CREATE INDEX "CreditLedgerEntry_accountId_createdAt_idx" ON "CreditLedgerEntry"("accountId", "createdAt");

-- CreateIndex
CREATE INDEX "CreditLedgerEntry_datasetId_createdAt_idx" ON "CreditLedgerEntry"("datasetId", "createdAt");

-- CreateIndex
CREATE INDEX "IdempotencyKey_createdAt_idx" ON "IdempotencyKey"("createdAt");

-- AddForeignKey
ALTER TABLE "CreditUsage" ADD CONSTRAINT "CreditUsage_datasetId_fkey" FOREIGN KEY ("datasetId") REFERENCES "Dataset"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "CreditLedgerEntry" ADD CONSTRAINT "CreditLedgerEntry_accountId_datasetId_fkey" FOREIGN KEY ("accountId", "datasetId") REFERENCES "Dataset"("accountId", "id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "IdempotencyKey" ADD CONSTRAINT "IdempotencyKey_accountId_fkey" FOREIGN KEY ("accountId") REFERENCES "Account"("id") ON DELETE CASCADE ON UPDATE CASCADE;
