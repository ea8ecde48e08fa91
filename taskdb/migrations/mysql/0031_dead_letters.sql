-- toc:additive
-- 0031: toc_dead, the dead letters by topic and time of death: one row
-- for each dead job, written in the transaction that kills it, deleted
-- when it is replayed, purged or retired. A page of dead letters and the
-- retirer's dead jobs read it (once 0032 has run), so toc_jobs needs no
-- index of ended jobs: toc_jobs_ended, whose three virtual columns cost
-- MariaDB 3.5 µs of every fire (BenchmarkFireCycle, issue 35), goes in
-- 0032. Until then builds read dead letters from toc_jobs_ended as
-- before, since a member of v0.1.0 kills jobs without writing here.
CREATE TABLE IF NOT EXISTS toc_dead (
    topic   VARCHAR(64)     NOT NULL,
    died_at BIGINT          NOT NULL,
    job_id  BIGINT UNSIGNED NOT NULL,
    PRIMARY KEY (topic, died_at, job_id),
    KEY toc_dead_job (job_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
