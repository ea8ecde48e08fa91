-- toc:contract
-- 0030: drop toc_jobs_dead, which no read of this build uses: dead
-- letters are listed by toc_jobs_ended (see the MySQL 0030).
DROP INDEX IF EXISTS toc_jobs_dead;
