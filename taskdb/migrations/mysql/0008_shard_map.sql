-- 0008: the shard map this database is part of (see taskdb/shardmap.go):
-- one row, written by toc migrate, checked by toc serve at start.
CREATE TABLE IF NOT EXISTS toc_shard_map (
    one          TINYINT      NOT NULL PRIMARY KEY,
    map_id       VARCHAR(64)  NOT NULL,
    shards       INT          NOT NULL,
    shard        INT          NOT NULL,
    earlier      VARCHAR(255) NOT NULL,
    gmt_modified BIGINT       NOT NULL
);
