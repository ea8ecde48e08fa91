-- 0014: recurring schedules (see the MySQL 0014).
CREATE TABLE IF NOT EXISTS toc_schedules (
    schedule_id  INTEGER NOT NULL PRIMARY KEY,
    topic        TEXT    NOT NULL,
    biz_id       INTEGER NOT NULL DEFAULT 0,
    biz_type     INTEGER NOT NULL DEFAULT 0,
    callback     TEXT    NOT NULL,
    payload      BLOB    NULL,
    max_attempts INTEGER NOT NULL DEFAULT 0,
    priority     INTEGER NOT NULL DEFAULT 0,
    cron         TEXT    NOT NULL DEFAULT '',
    time_zone    TEXT    NOT NULL DEFAULT '',
    every_ms     INTEGER NOT NULL DEFAULT 0,
    start_at     INTEGER NOT NULL DEFAULT 0,
    end_at       INTEGER NOT NULL DEFAULT 0,
    catch_up     INTEGER NOT NULL,
    paused       INTEGER NOT NULL DEFAULT 0,
    next_at      INTEGER NOT NULL,
    gmt_create   INTEGER NOT NULL,
    gmt_modified INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS toc_schedules_due ON toc_schedules (paused, next_at, schedule_id);
