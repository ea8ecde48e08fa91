-- toc:contract
-- 0029: drop toc_jobs_status_due, which no read of this build uses (0028
-- and the backstop's scan by topic): a completed job then moves in one
-- index that holds status instead of two (issue 35). v0.1.0's backstop
-- scans by it, so the drop waits until no member of v0.1.0 is left: it
-- is a contract migration, applied to a new database at once and to one
-- that v0.1.0 served only by toc migrate --contract, after which v0.1.0
-- refuses the schema (docs/operations.md, Migrations). When v0.1.0 is
-- no longer a release to mix with, mark it additive instead.
ALTER TABLE toc_jobs
    DROP INDEX IF EXISTS toc_jobs_status_due,
    ALGORITHM = NOCOPY, LOCK = NONE;
