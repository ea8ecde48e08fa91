-- toc:additive
-- 0033: toc_done_attempts, the attempts that succeeded, packed: one row
-- for the successes a done-update marked together, written in its
-- transaction, keyed by the time it wrote into their rows'
-- gmt_modified and the smallest job id of the pack. An attempt row of
-- toc_attempts for each fire cost MariaDB about 10 µs of the 30-odd a
-- fire costs it; the packs about 2 µs (BenchmarkFireCycle, issue 35).
-- The history of a done job is its rows in
-- toc_attempts (the failed attempts, and every attempt a build before
-- this one made) and its entry in the pack of its done time. A pack is
-- deleted when its last job is retired, or past --attempt-retention.
CREATE TABLE IF NOT EXISTS toc_done_attempts (
    done_at   BIGINT          NOT NULL,
    first_job BIGINT UNSIGNED NOT NULL,
    pack      MEDIUMBLOB      NOT NULL,
    PRIMARY KEY (done_at, first_job)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
