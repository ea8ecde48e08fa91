-- 0015: a topic's lateness objective (lateness_slo_ms, 0: none), the
-- bound under which workers count a call as on time.
ALTER TABLE toc_topics
    ADD COLUMN IF NOT EXISTS lateness_slo_ms BIGINT NOT NULL DEFAULT 0,
    ALGORITHM = NOCOPY, LOCK = NONE;
