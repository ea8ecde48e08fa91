-- 0018: a job's concurrency key, and the unique index of the rows that
-- hold their key (see the MySQL 0018): a partial index, which only
-- holders are in. The key is TEXT, compared with '' as text (a BLOB never
-- equals a TEXT in SQLite).
ALTER TABLE toc_jobs ADD COLUMN concurrency_key TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX IF NOT EXISTS toc_jobs_ck_held ON toc_jobs (topic, concurrency_key)
    WHERE status = 0 AND (fired = 1 OR attempts > 0) AND concurrency_key <> '';

-- A schedule's job template keeps the concurrency key of the jobs it
-- makes.
ALTER TABLE toc_schedules ADD COLUMN concurrency_key TEXT NOT NULL DEFAULT '';
