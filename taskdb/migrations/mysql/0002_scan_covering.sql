-- 0002: the backstop's scan reads the index alone.
--
-- ScanPending needs topic, biz_id and attempts besides the key columns. In
-- the index, a page of the scan is one range read; without them, every row
-- costs a primary-key lookup, which on a store larger than the buffer pool
-- is a random read (1,000,000 timers took 110 s to restore after a Redis
-- loss on a 4,000,000-row store, toc bench).
ALTER TABLE toc_jobs
    DROP INDEX toc_jobs_status_due,
    ADD INDEX toc_jobs_status_due (status, action_time, job_id, topic, biz_id, attempts),
    ALGORITHM = NOCOPY, LOCK = NONE;
