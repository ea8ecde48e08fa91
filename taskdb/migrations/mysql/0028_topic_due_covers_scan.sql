-- toc:additive
-- 0028: toc_jobs_topic_due covers the backstop's scan (issue 35). A
-- completed job moved in both indexes that hold status, about 11 µs of
-- MariaDB's CPU a fire each (BenchmarkFireCycle). The backstop now scans
-- topic by topic in toc_jobs_topic_due, which every read by topic needs
-- anyway, so it carries the columns a Timer needs, as
-- toc_jobs_status_due did; 0029 then drops toc_jobs_status_due. The
-- index keeps its name and its first four columns, so a build before
-- this one plans its reads of it as before: additive. One statement:
-- MariaDB builds the wider index online and swaps it in at the end.
ALTER TABLE toc_jobs
    DROP INDEX IF EXISTS toc_jobs_topic_due,
    ADD INDEX toc_jobs_topic_due (topic, status, action_time, job_id, biz_id, attempts, priority, window_ms),
    ALGORITHM = NOCOPY, LOCK = NONE;
