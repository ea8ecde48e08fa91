-- 0005: dead letters are rows, and a job is firing while its webhook is
-- called.
--
-- Firing is a flag on a pending row (status 0, fired 1) rather than a
-- status of its own: the worker sets it for every job it fires, and a
-- column in no index costs that UPDATE no secondary-index work (status is
-- in two indexes). Status 5 (purged) needs no change. last_status keeps
-- the HTTP status the receiver of the last failed attempt answered (0:
-- none). The dead-letter listing walks a topic's dead rows in order of
-- death, so toc_jobs_topic_status gains gmt_modified and job_id (counts by
-- topic and status still use its prefix).
ALTER TABLE toc_jobs
    ADD COLUMN IF NOT EXISTS fired TINYINT NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS last_status SMALLINT NOT NULL DEFAULT 0,
    DROP INDEX IF EXISTS toc_jobs_topic_status,
    ADD INDEX toc_jobs_topic_status (topic, status, gmt_modified, job_id),
    ALGORITHM = INPLACE, LOCK = NONE;
