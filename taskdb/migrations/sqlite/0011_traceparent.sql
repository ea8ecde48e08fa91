-- 0011: a job keeps the W3C traceparent of the request that scheduled it
-- (see the MySQL 0011).
ALTER TABLE toc_jobs ADD COLUMN traceparent TEXT NOT NULL DEFAULT '';
