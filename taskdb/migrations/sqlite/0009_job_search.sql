-- 0009: finding jobs (see the MySQL 0009).
CREATE INDEX IF NOT EXISTS toc_jobs_topic_due ON toc_jobs (topic, status, action_time, job_id);
CREATE INDEX IF NOT EXISTS toc_jobs_topic_biz ON toc_jobs (topic, biz_id, action_time, job_id);
