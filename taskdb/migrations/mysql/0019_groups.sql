-- 0019: groups (timer.Group). A job may be a member of one group
-- (toc_jobs.group_id, NULL for none); toc_jobs_group (group_id, status)
-- counts a group's members by status and finds a live one (status 0:
-- pending or firing) without reading rows. MariaDB builds the index in
-- place, reading the table once.
--
-- toc_groups holds a group: its on_complete callback (callback NULL:
-- none), when it was sealed (0: open) and completed (0: not yet), the
-- counts by status at completion (a JSON object by status code), and its
-- completion job (0: none yet). finished is 1 once nothing is left to do
-- for it (completed, and its job recorded if it has a callback):
-- toc_groups_unfinished is what the completer's sweep reads.
--
-- The one migration that blocks writes: since 0018, toc_jobs has an
-- indexed virtual column, and MariaDB 10.11 adds a stored column to such
-- a table only by rebuilding it with writes blocked (LOCK = SHARED; no
-- INSTANT, no LOCK = NONE). It ran on every store before migrations had
-- to be online; a later migration adds a virtual column, or a table of
-- its own, instead (README, Migrations).
ALTER TABLE toc_jobs
    ADD COLUMN IF NOT EXISTS group_id VARBINARY(100) NULL,
    ALGORITHM = INPLACE, LOCK = SHARED;
CREATE INDEX IF NOT EXISTS toc_jobs_group ON toc_jobs (group_id, status)
    ALGORITHM = NOCOPY LOCK = NONE;
CREATE TABLE IF NOT EXISTS toc_groups (
    group_id       VARBINARY(100)  NOT NULL,
    cb_topic       VARCHAR(64)     NOT NULL DEFAULT '',
    callback       VARCHAR(2048)   NULL,
    payload        MEDIUMBLOB      NULL,
    gmt_create     BIGINT          NOT NULL,
    sealed_at      BIGINT          NOT NULL DEFAULT 0,
    completed_at   BIGINT          NOT NULL DEFAULT 0,
    counts         VARCHAR(1024)   NOT NULL DEFAULT '',
    completion_job BIGINT UNSIGNED NOT NULL DEFAULT 0,
    finished       TINYINT         NOT NULL DEFAULT 0,
    PRIMARY KEY (group_id),
    KEY toc_groups_unfinished (finished, group_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
