-- 0003: per-topic defaults; 0 means the service's default.
ALTER TABLE toc_topics ADD COLUMN max_attempts INT NOT NULL DEFAULT 0,
    ALGORITHM = NOCOPY, LOCK = NONE;
