-- 0006: a topic can be paused (see the MySQL 0006).
ALTER TABLE toc_topics ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
