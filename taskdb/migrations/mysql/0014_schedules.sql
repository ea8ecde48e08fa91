-- 0014: recurring schedules (timer.Schedule). A row is the job template,
-- the rule (cron and time_zone, or every_ms), its bounds (start_at, end_at;
-- 0: none), the catch-up policy (timer.CatchUp: 0 skip, 1 last, 2 all) and
-- next_at, the cursor: the earliest occurrence not yet made into a job, in
-- Unix ms (0: none left). The materializer reads the due rows by
-- (paused, next_at) and moves next_at with a compare-and-set.
CREATE TABLE IF NOT EXISTS toc_schedules (
    schedule_id  BIGINT UNSIGNED  NOT NULL,
    topic        VARCHAR(64)      NOT NULL,
    biz_id       BIGINT UNSIGNED  NOT NULL DEFAULT 0,
    biz_type     BIGINT UNSIGNED  NOT NULL DEFAULT 0,
    callback     VARCHAR(2048)    NOT NULL,
    payload      MEDIUMBLOB       NULL,
    max_attempts INT              NOT NULL DEFAULT 0,
    priority     TINYINT          NOT NULL DEFAULT 0,
    cron         VARCHAR(256)     NOT NULL DEFAULT '',
    time_zone    VARCHAR(64)      NOT NULL DEFAULT '',
    every_ms     BIGINT           NOT NULL DEFAULT 0,
    start_at     BIGINT           NOT NULL DEFAULT 0,
    end_at       BIGINT           NOT NULL DEFAULT 0,
    catch_up     TINYINT UNSIGNED NOT NULL,
    paused       TINYINT          NOT NULL DEFAULT 0,
    next_at      BIGINT           NOT NULL,
    gmt_create   BIGINT           NOT NULL,
    gmt_modified BIGINT           NOT NULL,
    PRIMARY KEY (schedule_id),
    KEY toc_schedules_due (paused, next_at, schedule_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
