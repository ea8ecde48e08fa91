-- 0001: the job rows and the topics.
--
-- Every time is Unix milliseconds. biz_id and biz_type hold the bits of an
-- unsigned 64-bit number in SQLite's signed INTEGER. STRICT tables reject a
-- value of the wrong type instead of storing it.

CREATE TABLE IF NOT EXISTS toc_jobs (
    job_id       INTEGER NOT NULL PRIMARY KEY,
    topic        TEXT    NOT NULL,
    idem_key     BLOB,
    biz_id       INTEGER NOT NULL DEFAULT 0,
    biz_type     INTEGER NOT NULL DEFAULT 0,
    status       INTEGER NOT NULL,
    action_time  INTEGER NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL,
    last_error   TEXT    NOT NULL DEFAULT '',
    callback     TEXT    NOT NULL DEFAULT '',
    payload      BLOB,
    gmt_create   INTEGER NOT NULL,
    gmt_modified INTEGER NOT NULL
) STRICT;

CREATE UNIQUE INDEX IF NOT EXISTS toc_jobs_topic_key ON toc_jobs (topic, idem_key);
CREATE INDEX IF NOT EXISTS toc_jobs_status_due ON toc_jobs (status, action_time, job_id);
CREATE INDEX IF NOT EXISTS toc_jobs_topic_status ON toc_jobs (topic, status);

CREATE TABLE IF NOT EXISTS toc_topics (
    name       TEXT    NOT NULL PRIMARY KEY,
    slots      INTEGER NOT NULL,
    gmt_create INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
