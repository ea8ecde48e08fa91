-- 0016: deadlines (issue 18). A job's deadline rule, expire_after_ms
-- (NULL: none; 0: it must not fire late at all), and its deadline,
-- expire_at (Unix ms: its due time when scheduled or rescheduled plus
-- expire_after_ms; NULL: none). The deadline is absolute because a
-- retry moves action_time; the rule is kept so that a reschedule moves
-- the deadline with the due time. A job that cannot start an attempt by
-- expire_at ends expired (status 6). A topic's expire_after_ms is the
-- default copied into its jobs that set none. Columns with no default
-- are added in place, without copying the table.
ALTER TABLE toc_jobs
    ADD COLUMN IF NOT EXISTS expire_after_ms BIGINT NULL,
    ADD COLUMN IF NOT EXISTS expire_at BIGINT NULL,
    ALGORITHM = NOCOPY, LOCK = NONE;
ALTER TABLE toc_topics
    ADD COLUMN IF NOT EXISTS expire_after_ms BIGINT NULL,
    ALGORITHM = NOCOPY, LOCK = NONE;
-- A schedule's job template: NULL takes the topic's deadline, -1 none.
ALTER TABLE toc_schedules
    ADD COLUMN IF NOT EXISTS expire_after_ms BIGINT NULL,
    ALGORITHM = NOCOPY, LOCK = NONE;
