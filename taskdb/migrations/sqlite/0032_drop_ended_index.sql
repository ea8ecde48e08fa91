-- toc:contract
-- 0032: dead letters are read from toc_dead; toc_jobs_ended goes (see
-- the MySQL 0032). Its columns stay: without an index they cost nothing.
INSERT OR IGNORE INTO toc_dead (topic, died_at, job_id)
    SELECT ended_topic, ended_at, job_id FROM toc_jobs WHERE ended_status = 4;
DELETE FROM toc_dead WHERE NOT EXISTS (SELECT 1 FROM toc_jobs
    WHERE toc_jobs.job_id = toc_dead.job_id AND toc_jobs.status = 4 AND toc_jobs.gmt_modified = toc_dead.died_at);
DROP INDEX IF EXISTS toc_jobs_ended;
