-- toc:additive
-- 0027: a done job moves in one index fewer when it ends (issue 35).
-- Completing a job moved it in toc_jobs_status_due, toc_jobs_topic_due
-- and, since 0025, toc_jobs_ended too: 26 µs of MariaDB's CPU a job
-- against 16-18 without the last (BenchmarkFireCycle, batches of 200).
-- A done job ends at or after its due time (its last attempt started
-- then), so the retirer finds done jobs past their retention in
-- toc_jobs_topic_due, by due time, which the completion moves anyway; the
-- jobs that can end before they are due (cancelled, purged, expired) and
-- the dead, rare, stay in toc_jobs_ended. ended_topic, ended_status and
-- ended_at are now NULL for a done row. Only builds since 0025 read them,
-- none released (v0.1.0 stops at 0021), so a build before this one is
-- not a member to mix with. Three statements, none copying the table:
-- the index goes, its columns change, the index is built again (one read
-- of the table; until then the retirer's reads of it are bounded, and it
-- tries again).
ALTER TABLE toc_jobs
    DROP INDEX IF EXISTS toc_jobs_ended,
    ALGORITHM = NOCOPY, LOCK = NONE;
ALTER TABLE toc_jobs
    MODIFY COLUMN ended_topic VARCHAR(64) AS (IF(status IN (3, 4, 5, 6), topic, NULL)) VIRTUAL,
    MODIFY COLUMN ended_status TINYINT UNSIGNED AS (IF(status IN (3, 4, 5, 6), status, NULL)) VIRTUAL,
    MODIFY COLUMN ended_at BIGINT AS (IF(status IN (3, 4, 5, 6), gmt_modified, NULL)) VIRTUAL,
    ALGORITHM = NOCOPY, LOCK = NONE;
ALTER TABLE toc_jobs
    ADD INDEX IF NOT EXISTS toc_jobs_ended (ended_topic, ended_status, ended_at, job_id),
    ALGORITHM = NOCOPY, LOCK = NONE;
