-- 0013: a job's version (timer.Job.Version), which every change of its
-- row moves by one in the UPDATE that makes the change; GET /v1/jobs/{id}
-- answers it as the ETag, and PATCH and DELETE with If-Match change the
-- row only while it is unchanged. Rows written before start at 1, as a
-- new row does. MariaDB adds a column with a default at the end of the
-- table in place, without copying it.
ALTER TABLE toc_jobs
    ADD COLUMN IF NOT EXISTS version BIGINT NOT NULL DEFAULT 1,
    ALGORITHM = NOCOPY, LOCK = NONE;
