-- 0019: groups (see the MySQL 0019).
ALTER TABLE toc_jobs ADD COLUMN group_id BLOB NULL;
CREATE INDEX IF NOT EXISTS toc_jobs_group ON toc_jobs (group_id, status);
CREATE TABLE IF NOT EXISTS toc_groups (
    group_id       BLOB    NOT NULL PRIMARY KEY,
    cb_topic       TEXT    NOT NULL DEFAULT '',
    callback       TEXT    NULL,
    payload        BLOB    NULL,
    gmt_create     INTEGER NOT NULL,
    sealed_at      INTEGER NOT NULL DEFAULT 0,
    completed_at   INTEGER NOT NULL DEFAULT 0,
    counts         TEXT    NOT NULL DEFAULT '',
    completion_job INTEGER NOT NULL DEFAULT 0,
    finished       INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS toc_groups_unfinished ON toc_groups (finished, group_id);
