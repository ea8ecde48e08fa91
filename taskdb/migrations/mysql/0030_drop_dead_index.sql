-- toc:contract
-- 0030: drop toc_jobs_dead (dead_topic, dead_at, job_id), which no read
-- of this build uses: a page of dead letters reads the same range of
-- toc_jobs_ended (ended_topic, ended_status 4, ended_at, job_id), the
-- index the retirer reads (0025, 0027). Every job written had an entry in
-- it, NULL for all but the dead: about a tenth of MariaDB's time a row
-- inserted (BenchmarkInsertIndexCost, issue 35). v0.1.0 lists dead
-- letters by it, so the drop waits until no member of v0.1.0 is left: a
-- contract migration, as 0029 (docs/operations.md, Contract migrations).
-- The virtual columns dead_topic and dead_at stay: they cost no storage,
-- and v0.1.0's reads name them.
ALTER TABLE toc_jobs
    DROP INDEX IF EXISTS toc_jobs_dead,
    ALGORITHM = NOCOPY, LOCK = NONE;
