-- toc:additive
-- 0031: toc_dead, the dead letters by topic and time of death (see the
-- MySQL 0031).
CREATE TABLE IF NOT EXISTS toc_dead (
    topic   TEXT    NOT NULL,
    died_at INTEGER NOT NULL,
    job_id  INTEGER NOT NULL,
    PRIMARY KEY (topic, died_at, job_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS toc_dead_job ON toc_dead (job_id);
