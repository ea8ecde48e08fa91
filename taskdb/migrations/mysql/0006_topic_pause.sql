-- 0006: a topic can be paused. A paused topic accepts jobs and fires none
-- until it is resumed; its due jobs wait in Redis meanwhile.
ALTER TABLE toc_topics
    ADD COLUMN IF NOT EXISTS paused TINYINT NOT NULL DEFAULT 0,
    ALGORITHM = NOCOPY, LOCK = NONE;
