-- toc:additive
-- 0033: toc_done_attempts, the attempts that succeeded, packed (see the
-- MySQL 0033).
CREATE TABLE IF NOT EXISTS toc_done_attempts (
    done_at   INTEGER NOT NULL,
    first_job INTEGER NOT NULL,
    pack      BLOB    NOT NULL,
    PRIMARY KEY (done_at, first_job)
) STRICT, WITHOUT ROWID;
