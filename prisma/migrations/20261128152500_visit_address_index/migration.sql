-- The visits of an address range by index (issue 39 item 6): withdrawal takes back the visits an
-- identity attributed in the ranges whose evidence changed, and a removed declaration the visits
-- inside its network. Without this index each was a scan of "Visit" ("ip"::inet <<= ranges),
-- a cost that grew with the history kept. A GiST index on the address as inet (inet_ops answers
-- <<= and >>=), created on the partitioned table and so on every partition. "ip" stays text (what
-- the writer inserts): the index is on the expression, which Prisma's schema cannot express and
-- its drift check leaves alone.
CREATE INDEX "Visit_ip_inet_idx" ON "Visit" USING GIST ((("ip")::inet) inet_ops);
