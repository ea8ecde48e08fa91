-- 0007: node numbers of job ids are leased (see the MySQL 0007).
CREATE TABLE IF NOT EXISTS toc_nodes (
    node       INTEGER NOT NULL PRIMARY KEY,
    holder     TEXT    NOT NULL,
    expires_at INTEGER NOT NULL
);
