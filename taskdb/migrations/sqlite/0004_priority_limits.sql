-- 0004: job priorities and per-topic dispatch limits (see the MySQL 0004).
ALTER TABLE toc_jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
DROP INDEX IF EXISTS toc_jobs_status_due;
CREATE INDEX IF NOT EXISTS toc_jobs_status_due ON toc_jobs (status, action_time, job_id, topic, biz_id, attempts, priority);
ALTER TABLE toc_topics ADD COLUMN rate_limit REAL NOT NULL DEFAULT 0;
ALTER TABLE toc_topics ADD COLUMN burst INTEGER NOT NULL DEFAULT 0;
ALTER TABLE toc_topics ADD COLUMN max_in_flight INTEGER NOT NULL DEFAULT 0;
ALTER TABLE toc_topics ADD COLUMN weight INTEGER NOT NULL DEFAULT 0;
ALTER TABLE toc_topics ADD COLUMN retry_base_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE toc_topics ADD COLUMN retry_max_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE toc_topics ADD COLUMN lease_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE toc_topics ADD COLUMN callback_timeout_ms INTEGER NOT NULL DEFAULT 0;
