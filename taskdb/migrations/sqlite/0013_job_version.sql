-- 0013: a job's version (timer.Job.Version), which every change of its
-- row moves by one (see the MySQL 0013).
ALTER TABLE toc_jobs ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
