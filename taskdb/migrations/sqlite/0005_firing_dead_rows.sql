-- 0005: dead letters are rows, and a job is firing while its webhook is
-- called (see the MySQL 0005).
ALTER TABLE toc_jobs ADD COLUMN fired INTEGER NOT NULL DEFAULT 0;
ALTER TABLE toc_jobs ADD COLUMN last_status INTEGER NOT NULL DEFAULT 0;
DROP INDEX IF EXISTS toc_jobs_topic_status;
CREATE INDEX IF NOT EXISTS toc_jobs_topic_status ON toc_jobs (topic, status, gmt_modified, job_id);
