-- 0011: a job keeps the W3C traceparent of the request that scheduled it
-- (timer.Job.TraceParent), which its webhook carries on; '' for none, as
-- every row written before. ASCII, at most timer.MaxTraceParentBytes (128).
-- MariaDB adds a column with a default at the end of the table in place,
-- without copying it.
ALTER TABLE toc_jobs
    ADD COLUMN IF NOT EXISTS traceparent VARCHAR(128) NOT NULL DEFAULT '',
    ALGORITHM = NOCOPY, LOCK = NONE;
