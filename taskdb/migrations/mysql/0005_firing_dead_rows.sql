-- 0005: dead letters are rows, and a job is firing while its webhook is
-- called.
--
-- Status 1 (firing) and 5 (purged) need no schema change. last_status
-- keeps the HTTP status the receiver of the last failed attempt answered
-- (0: none). The dead-letter listing walks a topic's dead rows in order of
-- death, so toc_jobs_topic_status gains gmt_modified and job_id (counts by
-- topic and status still use its prefix).
ALTER TABLE toc_jobs
    ADD COLUMN IF NOT EXISTS last_status SMALLINT NOT NULL DEFAULT 0,
    DROP INDEX IF EXISTS toc_jobs_topic_status,
    ADD INDEX toc_jobs_topic_status (topic, status, gmt_modified, job_id);
