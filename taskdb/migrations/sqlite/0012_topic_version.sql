-- 0012: the counter of topic writes (see the MySQL 0012).
CREATE TABLE IF NOT EXISTS toc_topic_version (
    id      INTEGER NOT NULL PRIMARY KEY,
    version INTEGER NOT NULL
);
INSERT OR IGNORE INTO toc_topic_version (id, version) VALUES (1, 0);
