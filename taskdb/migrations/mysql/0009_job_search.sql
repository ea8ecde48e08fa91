-- 0009: finding jobs (timer.JobLister, GET /v1/jobs): a topic's jobs of
-- one status in due order, and a topic's jobs of one business id in due
-- order, each a range of an index. A key's job is the unique index
-- toc_jobs_topic_key's already.
ALTER TABLE toc_jobs
    ADD INDEX toc_jobs_topic_due (topic, status, action_time, job_id),
    ADD INDEX toc_jobs_topic_biz (topic, biz_id, action_time, job_id),
    ALGORITHM = NOCOPY, LOCK = NONE;
