-- 0016: deadlines (issue 18): a job's deadline rule and deadline, and a
-- topic's default rule (see the MySQL 0016).
ALTER TABLE toc_jobs ADD COLUMN expire_after_ms INTEGER NULL;
ALTER TABLE toc_jobs ADD COLUMN expire_at INTEGER NULL;
ALTER TABLE toc_topics ADD COLUMN expire_after_ms INTEGER NULL;
-- A schedule's job template: NULL takes the topic's deadline, -1 none.
ALTER TABLE toc_schedules ADD COLUMN expire_after_ms INTEGER NULL;
