-- 0021: the dead letters and a group's members by virtual columns (see
-- the MySQL 0021), each index partial: only dead rows are in
-- toc_jobs_dead, only members of a group in toc_jobs_group. A query's
-- comparison on dead_topic or group_id implies the index's condition.
ALTER TABLE toc_jobs ADD COLUMN dead_topic TEXT GENERATED ALWAYS AS (CASE WHEN status = 4 THEN topic END) VIRTUAL;
ALTER TABLE toc_jobs ADD COLUMN dead_at INTEGER GENERATED ALWAYS AS (CASE WHEN status = 4 THEN gmt_modified END) VIRTUAL;
ALTER TABLE toc_jobs ADD COLUMN group_status INTEGER GENERATED ALWAYS AS (CASE WHEN group_id IS NOT NULL THEN status END) VIRTUAL;
DROP INDEX IF EXISTS toc_jobs_topic_status;
DROP INDEX IF EXISTS toc_jobs_group;
CREATE INDEX IF NOT EXISTS toc_jobs_dead ON toc_jobs (dead_topic, dead_at, job_id) WHERE dead_topic IS NOT NULL;
CREATE INDEX IF NOT EXISTS toc_jobs_group ON toc_jobs (group_id, group_status) WHERE group_id IS NOT NULL;
