-- 0017: a job's flexible window in milliseconds (timer.Job.Window): a
-- worker may fire it anywhere in [action_time, action_time + window_ms],
-- taking due jobs under pressure in the order of the ends of their
-- windows. 0 (none) for every row written before.
--
-- The backstop loads a job into Redis with its window (a job scheduled
-- beyond the horizon comes in that way), so the scan's covering index
-- carries window_ms too, as 0004 did for priority.
ALTER TABLE toc_jobs
    ADD COLUMN IF NOT EXISTS window_ms BIGINT NOT NULL DEFAULT 0,
    DROP INDEX IF EXISTS toc_jobs_status_due,
    ADD INDEX toc_jobs_status_due (status, action_time, job_id, topic, biz_id, attempts, priority, window_ms),
    ALGORITHM = INPLACE, LOCK = NONE;
