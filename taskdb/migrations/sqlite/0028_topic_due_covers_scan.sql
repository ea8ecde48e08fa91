-- toc:additive
-- 0028: toc_jobs_topic_due covers the backstop's scan by topic (see the
-- MySQL 0028).
DROP INDEX IF EXISTS toc_jobs_topic_due;
CREATE INDEX IF NOT EXISTS toc_jobs_topic_due ON toc_jobs (topic, status, action_time, job_id, biz_id, attempts, priority, window_ms);
