-- toc:additive
-- 0024: the deadlines of jobs waiting to fire (see the MySQL 0024), in a
-- partial index: only rows that are pending, not firing, with a deadline.
-- A query's comparison on waiting_deadline implies the index's condition.
ALTER TABLE toc_jobs ADD COLUMN waiting_deadline INTEGER GENERATED ALWAYS AS (CASE WHEN status = 0 AND fired = 0 THEN expire_at END) VIRTUAL;
CREATE INDEX IF NOT EXISTS toc_jobs_overdue ON toc_jobs (waiting_deadline, job_id) WHERE waiting_deadline IS NOT NULL;
