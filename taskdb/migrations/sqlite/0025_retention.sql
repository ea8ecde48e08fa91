-- toc:additive
-- 0025: retention (see the MySQL 0025), the index partial: only ended
-- rows are in toc_jobs_ended. A query's comparison on ended_topic implies
-- the index's condition.
ALTER TABLE toc_jobs ADD COLUMN ended_topic TEXT GENERATED ALWAYS AS (CASE WHEN status IN (2, 3, 4, 5, 6) THEN topic END) VIRTUAL;
ALTER TABLE toc_jobs ADD COLUMN ended_status INTEGER GENERATED ALWAYS AS (CASE WHEN status IN (2, 3, 4, 5, 6) THEN status END) VIRTUAL;
ALTER TABLE toc_jobs ADD COLUMN ended_at INTEGER GENERATED ALWAYS AS (CASE WHEN status IN (2, 3, 4, 5, 6) THEN gmt_modified END) VIRTUAL;
CREATE INDEX IF NOT EXISTS toc_jobs_ended ON toc_jobs (ended_topic, ended_status, ended_at, job_id) WHERE ended_topic IS NOT NULL;
ALTER TABLE toc_topics ADD COLUMN retention TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS toc_groups_finished ON toc_groups (finished, completed_at, group_id);
