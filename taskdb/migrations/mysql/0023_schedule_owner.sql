-- toc:additive
-- 0023: a schedule's owner and its skipped occurrences (issue 32).
-- owner is the name of the token that created it ('' when the API had
-- no tokens): whose max_pending its occurrences are admitted against.
-- skipped counts the occurrences that made no job because that quota was
-- full; last_skipped_at (Unix ms, 0: never) and last_skip_reason say
-- when the last was and why. The materializer sets them with the cursor,
-- in the same compare-and-set. Columns with defaults added at the end of
-- the row: INSTANT on MariaDB 10.11, neither copying the table nor
-- blocking writes.
ALTER TABLE toc_schedules
    ADD COLUMN IF NOT EXISTS owner VARCHAR(128) NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS skipped BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS last_skipped_at BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS last_skip_reason VARCHAR(256) NOT NULL DEFAULT '',
    ALGORITHM = INSTANT, LOCK = NONE;
