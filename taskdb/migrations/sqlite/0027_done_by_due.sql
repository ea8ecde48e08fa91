-- toc:additive
-- 0027: a done job leaves toc_jobs_ended (see the MySQL 0027); the
-- retirer finds done jobs by due time in toc_jobs_topic_due. SQLite
-- changes a generated column only by dropping and adding it, after the
-- index on it.
DROP INDEX IF EXISTS toc_jobs_ended;
ALTER TABLE toc_jobs DROP COLUMN ended_topic;
ALTER TABLE toc_jobs DROP COLUMN ended_status;
ALTER TABLE toc_jobs DROP COLUMN ended_at;
ALTER TABLE toc_jobs ADD COLUMN ended_topic TEXT GENERATED ALWAYS AS (CASE WHEN status IN (3, 4, 5, 6) THEN topic END) VIRTUAL;
ALTER TABLE toc_jobs ADD COLUMN ended_status INTEGER GENERATED ALWAYS AS (CASE WHEN status IN (3, 4, 5, 6) THEN status END) VIRTUAL;
ALTER TABLE toc_jobs ADD COLUMN ended_at INTEGER GENERATED ALWAYS AS (CASE WHEN status IN (3, 4, 5, 6) THEN gmt_modified END) VIRTUAL;
CREATE INDEX IF NOT EXISTS toc_jobs_ended ON toc_jobs (ended_topic, ended_status, ended_at, job_id) WHERE ended_topic IS NOT NULL;
