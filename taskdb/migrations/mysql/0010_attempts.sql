-- 0010: the attempt history (timer.AttemptLog): a row per delivery made,
-- its start (ms) and duration, the receiver's status (0: no answer), the
-- error and the start of the response body; started_at's index serves
-- the pruning of old attempts.
CREATE TABLE IF NOT EXISTS toc_attempts (
    job_id      BIGINT UNSIGNED NOT NULL,
    attempt     INT             NOT NULL,
    started_at  BIGINT          NOT NULL,
    duration_ms INT             NOT NULL,
    status_code INT             NOT NULL DEFAULT 0,
    error       VARCHAR(1024)   NOT NULL DEFAULT '',
    excerpt     VARBINARY(1024) NOT NULL DEFAULT '',
    PRIMARY KEY (job_id, attempt, started_at),
    KEY toc_attempts_started (started_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
