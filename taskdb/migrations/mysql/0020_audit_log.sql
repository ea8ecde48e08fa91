-- 0020: the audit log (timer.AuditEntry): one row for each admin or bulk
-- action taken through the API, newest first by (at, audit_id). at is in
-- Unix ms; error is '' for an action that succeeded. Each filter of
-- GET /v1/audit (action, topic, who) has an index ordered as the list is;
-- the list alone, and since/until alone, read toc_audit_at.
CREATE TABLE IF NOT EXISTS toc_audit_log (
    audit_id BIGINT        NOT NULL AUTO_INCREMENT,
    at       BIGINT        NOT NULL,
    who      VARCHAR(128)  NOT NULL DEFAULT '',
    action   VARCHAR(64)   NOT NULL,
    topic    VARCHAR(64)   NOT NULL DEFAULT '',
    target   VARCHAR(256)  NOT NULL DEFAULT '',
    details  TEXT          NOT NULL,
    jobs     BIGINT        NOT NULL DEFAULT 0,
    error    VARCHAR(1024) NOT NULL DEFAULT '',
    PRIMARY KEY (audit_id),
    KEY toc_audit_at (at, audit_id),
    KEY toc_audit_action (action, at, audit_id),
    KEY toc_audit_topic (topic, at, audit_id),
    KEY toc_audit_who (who, at, audit_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
