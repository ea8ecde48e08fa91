-- 0015: a topic's lateness objective (lateness_slo_ms, 0: none), the
-- bound under which workers count a call as on time.
ALTER TABLE toc_topics ADD COLUMN lateness_slo_ms INTEGER NOT NULL DEFAULT 0;
