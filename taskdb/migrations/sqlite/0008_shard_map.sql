-- 0008: the shard map (see the MySQL 0008). SQLite stays one shard.
CREATE TABLE IF NOT EXISTS toc_shard_map (
    one          INTEGER NOT NULL PRIMARY KEY,
    map_id       TEXT    NOT NULL,
    shards       INTEGER NOT NULL,
    shard        INTEGER NOT NULL,
    earlier      TEXT    NOT NULL,
    gmt_modified INTEGER NOT NULL
);
