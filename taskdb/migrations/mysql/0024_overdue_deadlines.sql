-- toc:additive
-- 0024: the deadlines of jobs waiting to fire, for the backstop to end
-- those that pass while nothing claims the job (a paused topic's; issue
-- 32). waiting_deadline is a pending row's expire_at while no attempt is
-- under way (status 0, fired 0), NULL otherwise, and toc_jobs_overdue
-- orders it: the backstop reads the jobs whose deadline has passed, a
-- page at a time, never the pending jobs without one. A job without a
-- deadline is NULL from its insert to its end, so firing and completing
-- it moves nothing in the index (see 0021); one with a deadline moves
-- once when it fires. Neither statement copies the table.
ALTER TABLE toc_jobs
    ADD COLUMN IF NOT EXISTS waiting_deadline BIGINT AS (IF(status = 0 AND fired = 0, expire_at, NULL)) VIRTUAL,
    ALGORITHM = NOCOPY, LOCK = NONE;
ALTER TABLE toc_jobs
    ADD INDEX IF NOT EXISTS toc_jobs_overdue (waiting_deadline, job_id),
    ALGORITHM = NOCOPY, LOCK = NONE;
