-- toc:additive
-- 0025: retention (issue 33). The retirer finds the ended jobs of a
-- topic and status by when they ended, and deletes those past their
-- retention, without reading a live row. ended_topic, ended_status and
-- ended_at are a row's topic, status and last change (gmt_modified)
-- once it has ended (done 2, cancelled 3, dead 4, purged 5, expired 6;
-- timer.Status.Ended), NULL while it is pending or firing, and
-- toc_jobs_ended orders them. A live row's entry is all NULL, so
-- scheduling, claiming, retrying and failing a job move nothing in it: a
-- job moves once, when it ends (a replayed dead letter once more). Every
-- status that ends a job is in the list: a new one needs a migration of
-- its own.
--
-- toc_topics.retention holds a topic's own retention settings
-- ("done=86400000,dead=0", milliseconds, 0 keeping forever; empty: the
-- global retention in full). toc_groups_finished orders finished groups
-- by completion, for the retirer to delete those whose members are gone.
-- No statement copies a table or blocks writes.
ALTER TABLE toc_jobs
    ADD COLUMN IF NOT EXISTS ended_topic VARCHAR(64) AS (IF(status IN (2, 3, 4, 5, 6), topic, NULL)) VIRTUAL,
    ADD COLUMN IF NOT EXISTS ended_status TINYINT UNSIGNED AS (IF(status IN (2, 3, 4, 5, 6), status, NULL)) VIRTUAL,
    ADD COLUMN IF NOT EXISTS ended_at BIGINT AS (IF(status IN (2, 3, 4, 5, 6), gmt_modified, NULL)) VIRTUAL,
    ALGORITHM = NOCOPY, LOCK = NONE;
ALTER TABLE toc_jobs
    ADD INDEX IF NOT EXISTS toc_jobs_ended (ended_topic, ended_status, ended_at, job_id),
    ALGORITHM = NOCOPY, LOCK = NONE;
ALTER TABLE toc_topics
    ADD COLUMN IF NOT EXISTS retention VARCHAR(200) NOT NULL DEFAULT '',
    ALGORITHM = NOCOPY, LOCK = NONE;
ALTER TABLE toc_groups
    ADD INDEX IF NOT EXISTS toc_groups_finished (finished, completed_at, group_id),
    ALGORITHM = NOCOPY, LOCK = NONE;
