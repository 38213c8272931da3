-- Visits partitioned by RANGE of "at": one partition per UTC month, named "Visit_pYYYY_MM", and a
-- DEFAULT partition ("Visit_default") so that an insert never fails for want of its month. The
-- retention job (server/jobs/partitions.ts) makes the months ahead and drops a whole month once
-- every visit in it is past its dataset's retention. Prisma cannot express partitioning: its
-- schema engine sees the parent table only (partitions are left out of its description), so
-- schema.prisma describes "Visit" as it is, with the primary key ("id", "at"): the keys of a
-- partitioned table must hold its partition key ("id" alone stays unique, from its sequence).
-- The same statements run on PostgreSQL and on the embedded PGlite (PostgreSQL 17).
--
-- The rows move into a new partitioned table with the same name, columns, sequence, keys and
-- indexes, in one transaction (BEGIN and COMMIT are explicit: the driver adapter of the schema
-- engine, @prisma/adapter-pg, runs a migration statement by statement, split at every semicolon,
-- which is also why no comment or string here holds one).

BEGIN;

ALTER SEQUENCE "Visit_id_seq" OWNED BY NONE;

CREATE TABLE "Visit_partitioned" (
    "id" BIGINT NOT NULL DEFAULT nextval('"Visit_id_seq"'),
    "accountId" TEXT NOT NULL,
    "datasetId" TEXT NOT NULL,
    "leadId" TEXT NOT NULL,
    "visitorId" TEXT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "url" TEXT NOT NULL,
    "referrer" TEXT,
    "title" TEXT,
    "utmSource" TEXT,
    "utmMedium" TEXT,
    "utmCampaign" TEXT,
    "utmTerm" TEXT,
    "utmContent" TEXT,
    "ip" TEXT,
    "asn" INTEGER,
    "networkType" TEXT NOT NULL,
    "country" TEXT,
    "city" TEXT
) PARTITION BY RANGE ("at");

CREATE TABLE "Visit_default" PARTITION OF "Visit_partitioned" DEFAULT;

-- One partition for each month that holds visits and for this month and the next two. The block
-- is an E-string whose semicolons are written \073 (see above).
DO E'
DECLARE
  m timestamp\073
BEGIN
  FOR m IN
    SELECT DISTINCT date_trunc(''month'', "at" AT TIME ZONE ''UTC'') FROM "Visit"
    UNION
    SELECT generate_series(date_trunc(''month'', now() AT TIME ZONE ''UTC''),
                           date_trunc(''month'', now() AT TIME ZONE ''UTC'') + interval ''2 months'', interval ''1 month'')
  LOOP
    EXECUTE format(''CREATE TABLE %I PARTITION OF "Visit_partitioned" FOR VALUES FROM (%L) TO (%L)'',
      ''Visit_p'' || to_char(m, ''YYYY_MM''),
      to_char(m, ''YYYY-MM-DD'') || '' 00:00:00+00'', to_char(m + interval ''1 month'', ''YYYY-MM-DD'') || '' 00:00:00+00'')\073
  END LOOP\073
END';

INSERT INTO "Visit_partitioned" SELECT * FROM "Visit";

DROP TABLE "Visit";

ALTER TABLE "Visit_partitioned" RENAME TO "Visit";

ALTER SEQUENCE "Visit_id_seq" OWNED BY "Visit"."id";

ALTER TABLE "Visit" ADD CONSTRAINT "Visit_pkey" PRIMARY KEY ("id", "at");

CREATE INDEX "Visit_datasetId_leadId_at_id_idx" ON "Visit"("datasetId", "leadId", "at" DESC, "id" DESC);

CREATE INDEX "Visit_datasetId_visitorId_idx" ON "Visit"("datasetId", "visitorId");

ALTER TABLE "Visit" ADD CONSTRAINT "Visit_datasetId_leadId_fkey" FOREIGN KEY ("datasetId", "leadId") REFERENCES "Lead"("datasetId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "Visit" ADD CONSTRAINT "Visit_datasetId_visitorId_fkey" FOREIGN KEY ("datasetId", "visitorId") REFERENCES "Visitor"("datasetId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

COMMIT;
