-- 0018: a job's concurrency key (timer.Job.ConcurrencyKey, '' for none),
-- and the unique index that lets one job of a topic's key hold it at a
-- time (timer.HoldsKey): a firing row (status 0, fired 1), or a pending
-- one waiting for its retry (status 0, attempts > 0).
--
-- ck_held is the key while the row holds it and NULL otherwise; NULLs do
-- not collide in a unique index, so only holders meet there, and the
-- UPDATE that would make a second holder (Fire's) fails with 1062, which
-- the store reads as "busy". The column is VIRTUAL: MariaDB indexes
-- virtual columns (the index keeps the value), and adding one does not
-- copy the table, as a PERSISTENT column would. Rows written before have
-- no key and are in the index as NULL.
--
-- Three statements: MariaDB adds a virtual column in place only alone,
-- and as one statement (how 0018 was first written) the three copied
-- the table; each of these is online.
ALTER TABLE toc_jobs
    ADD COLUMN IF NOT EXISTS concurrency_key VARBINARY(128) NOT NULL DEFAULT '',
    ALGORITHM = INSTANT, LOCK = NONE;
ALTER TABLE toc_jobs
    ADD COLUMN IF NOT EXISTS ck_held VARBINARY(128) AS
        (IF(status = 0 AND (fired = 1 OR attempts > 0) AND concurrency_key <> '', concurrency_key, NULL)) VIRTUAL,
    ALGORITHM = INPLACE, LOCK = NONE;
ALTER TABLE toc_jobs
    ADD UNIQUE INDEX IF NOT EXISTS toc_jobs_ck_held (topic, ck_held),
    ALGORITHM = INPLACE, LOCK = NONE;

-- A schedule's job template keeps the concurrency key of the jobs it
-- makes.
ALTER TABLE toc_schedules
    ADD COLUMN IF NOT EXISTS concurrency_key VARBINARY(128) NOT NULL DEFAULT '',
    ALGORITHM = NOCOPY, LOCK = NONE;
