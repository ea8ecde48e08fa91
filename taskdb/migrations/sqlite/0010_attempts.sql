-- 0010: the attempt history (see the MySQL 0010). A rowid table, so that
-- pruning can delete a bounded batch by rowid.
CREATE TABLE IF NOT EXISTS toc_attempts (
    job_id      INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    started_at  INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL,
    status_code INTEGER NOT NULL DEFAULT 0,
    error       TEXT    NOT NULL DEFAULT '',
    excerpt     BLOB    NOT NULL DEFAULT x'',
    PRIMARY KEY (job_id, attempt, started_at)
) STRICT;

CREATE INDEX IF NOT EXISTS toc_attempts_started ON toc_attempts (started_at);
