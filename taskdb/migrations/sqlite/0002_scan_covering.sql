-- 0002: the backstop's scan reads the index alone (see the MySQL 0002).
DROP INDEX IF EXISTS toc_jobs_status_due;
CREATE INDEX IF NOT EXISTS toc_jobs_status_due ON toc_jobs (status, action_time, job_id, topic, biz_id, attempts);
