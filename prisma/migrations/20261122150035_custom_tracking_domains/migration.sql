-- CreateEnum
CREATE TYPE "TrackingDomainState" AS ENUM ('pending_dns', 'provisioning', 'active', 'failed');

-- CreateEnum
CREATE TYPE "CertificateJobState" AS ENUM ('queued', 'running', 'finished');

-- CreateTable
CREATE TABLE "TrackingDomain" (
    "id" BIGSERIAL NOT NULL,
    "accountId" TEXT NOT NULL,
    "datasetId" TEXT NOT NULL,
    "domain" TEXT NOT NULL,
    "state" "TrackingDomainState" NOT NULL DEFAULT 'provisioning',
    "reason" TEXT,
    "certificatePem" TEXT,
    "certificateKeyEnc" TEXT,
    "certificateNotAfter" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "TrackingDomain_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "CertificateJob" (
    "id" BIGSERIAL NOT NULL,
    "domainId" BIGINT NOT NULL,
    "state" "CertificateJobState" NOT NULL DEFAULT 'queued',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "lastError" TEXT,
    "leaseToken" TEXT,
    "leaseUntil" TIMESTAMPTZ(3),
    "runAfter" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "orderUrl" TEXT,
    "challengeToken" TEXT,
    "keyAuthorization" TEXT,
    "certificateKeyEnc" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,
    "startedAt" TIMESTAMPTZ(3),
    "finishedAt" TIMESTAMPTZ(3),

    CONSTRAINT "CertificateJob_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AcmeAccount" (
    "directoryUrl" TEXT NOT NULL,
    "keyEnc" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "AcmeAccount_pkey" PRIMARY KEY ("directoryUrl")
);

-- CreateIndex
CREATE UNIQUE INDEX "TrackingDomain_domain_key" ON "TrackingDomain"("domain");

-- CreateIndex
CREATE UNIQUE INDEX "TrackingDomain_accountId_datasetId_key" ON "TrackingDomain"("accountId", "datasetId");

-- CreateIndex
CREATE UNIQUE INDEX "CertificateJob_domainId_key" ON "CertificateJob"("domainId");

-- CreateIndex
CREATE UNIQUE INDEX "CertificateJob_challengeToken_key" ON "CertificateJob"("challengeToken");

-- CreateIndex
CREATE INDEX "CertificateJob_state_runAfter_idx" ON "CertificateJob"("state", "runAfter");

-- AddForeignKey
ALTER TABLE "TrackingDomain" ADD CONSTRAINT "TrackingDomain_accountId_datasetId_fkey" FOREIGN KEY ("accountId", "datasetId") REFERENCES "Dataset"("accountId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "CertificateJob" ADD CONSTRAINT "CertificateJob_domainId_fkey" FOREIGN KEY ("domainId") REFERENCES "TrackingDomain"("id") ON DELETE CASCADE ON UPDATE CASCADE;
