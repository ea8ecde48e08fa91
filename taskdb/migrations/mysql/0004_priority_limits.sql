-- 0004: job priorities and per-topic dispatch limits.
--
-- The backstop restores a job into the Store set of its priority, so the
-- scan's covering index carries priority too. Limits of 0 mean the
-- worker's default (unlimited, for rate_limit and max_in_flight).
ALTER TABLE toc_jobs
    ADD COLUMN IF NOT EXISTS priority TINYINT NOT NULL DEFAULT 0,
    DROP INDEX IF EXISTS toc_jobs_status_due,
    ADD INDEX toc_jobs_status_due (status, action_time, job_id, topic, biz_id, attempts, priority),
    ALGORITHM = INPLACE, LOCK = NONE;
ALTER TABLE toc_topics
    ADD COLUMN IF NOT EXISTS rate_limit          DOUBLE NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS burst               INT    NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS max_in_flight       INT    NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS weight              INT    NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS retry_base_ms       BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS retry_max_ms        BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS lease_ms            BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS callback_timeout_ms BIGINT NOT NULL DEFAULT 0,
    ALGORITHM = INPLACE, LOCK = NONE;
