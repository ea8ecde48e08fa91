-- toc:additive
-- 0023: a schedule's owner and its skipped occurrences (see the MySQL
-- 0023).
ALTER TABLE toc_schedules ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE toc_schedules ADD COLUMN skipped INTEGER NOT NULL DEFAULT 0;
ALTER TABLE toc_schedules ADD COLUMN last_skipped_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE toc_schedules ADD COLUMN last_skip_reason TEXT NOT NULL DEFAULT '';
