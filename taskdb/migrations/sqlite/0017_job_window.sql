-- 0017: a job's flexible window in milliseconds (timer.Job.Window), in
-- the scan's covering index too (see the MySQL 0017).
ALTER TABLE toc_jobs ADD COLUMN window_ms INTEGER NOT NULL DEFAULT 0;
DROP INDEX IF EXISTS toc_jobs_status_due;
CREATE INDEX IF NOT EXISTS toc_jobs_status_due ON toc_jobs (status, action_time, job_id, topic, biz_id, attempts, priority, window_ms);
