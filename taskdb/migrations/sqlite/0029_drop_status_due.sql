-- toc:contract
-- 0029: drop toc_jobs_status_due, which no read of this build uses (see
-- the MySQL 0029).
DROP INDEX IF EXISTS toc_jobs_status_due;
