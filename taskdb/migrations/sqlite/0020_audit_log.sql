-- 0020: the audit log (see the MySQL 0020). AUTOINCREMENT: an id is never
-- reused, even after the newest row is deleted.
CREATE TABLE IF NOT EXISTS toc_audit_log (
    audit_id INTEGER PRIMARY KEY AUTOINCREMENT,
    at       INTEGER NOT NULL,
    who      TEXT    NOT NULL DEFAULT '',
    action   TEXT    NOT NULL,
    topic    TEXT    NOT NULL DEFAULT '',
    target   TEXT    NOT NULL DEFAULT '',
    details  TEXT    NOT NULL DEFAULT '',
    jobs     INTEGER NOT NULL DEFAULT 0,
    error    TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS toc_audit_at ON toc_audit_log (at, audit_id);
CREATE INDEX IF NOT EXISTS toc_audit_action ON toc_audit_log (action, at, audit_id);
CREATE INDEX IF NOT EXISTS toc_audit_topic ON toc_audit_log (topic, at, audit_id);
CREATE INDEX IF NOT EXISTS toc_audit_who ON toc_audit_log (who, at, audit_id);
