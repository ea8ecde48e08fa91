-- toc:contract
-- 0032: drop toc_jobs_ended (0025, 0027). Dead letters are read from
-- toc_dead (0031); the other ended jobs (cancelled, purged, expired) are
-- found by due time in toc_jobs_topic_due as done jobs are, a cancelled
-- job kept for its retention after its due time or its cancel, whichever
-- is later. Members of v0.1.0 kill jobs without writing toc_dead, so
-- this waits until none is left (a contract migration, docs/operations.md,
-- Migrations): it first copies every dead job into toc_dead, from
-- toc_jobs_ended, and removes the entries of jobs no longer dead (one a
-- v0.1.0 member replayed or purged), then drops the index. Its virtual
-- columns stay, as 0030's did: without an index they cost nothing.
INSERT IGNORE INTO toc_dead (topic, died_at, job_id)
    SELECT ended_topic, ended_at, job_id FROM toc_jobs WHERE ended_status = 4;
DELETE FROM toc_dead WHERE NOT EXISTS (SELECT 1 FROM toc_jobs
    WHERE toc_jobs.job_id = toc_dead.job_id AND toc_jobs.status = 4 AND toc_jobs.gmt_modified = toc_dead.died_at);
ALTER TABLE toc_jobs
    DROP INDEX IF EXISTS toc_jobs_ended,
    ALGORITHM = NOCOPY, LOCK = NONE;
