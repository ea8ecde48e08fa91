-- 0012: one counter that every write of a topic row moves (create,
-- update, pause, delete), so that a process holding the topic list reads
-- one row to learn whether it changed, rather than the whole list: with
-- 100,000 topics that read was most of an idle toc's work.
CREATE TABLE IF NOT EXISTS toc_topic_version (
    id      TINYINT NOT NULL,
    version BIGINT  NOT NULL,
    PRIMARY KEY (id)
) ENGINE = InnoDB;
INSERT IGNORE INTO toc_topic_version (id, version) VALUES (1, 0);
