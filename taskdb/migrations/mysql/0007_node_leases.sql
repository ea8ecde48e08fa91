-- 0007: node numbers of job ids are leased (see taskdb/nodes.go): a row per
-- number ever held, its holder, and when its lease ends (ms of the
-- database's clock; 0: released).
CREATE TABLE IF NOT EXISTS toc_nodes (
    node       INT          NOT NULL PRIMARY KEY,
    holder     VARCHAR(255) NOT NULL,
    expires_at BIGINT       NOT NULL
);
