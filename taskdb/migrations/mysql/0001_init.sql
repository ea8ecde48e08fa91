-- 0001: the job rows and the topics.
--
-- Every time is Unix milliseconds. Text columns compare as bytes
-- (utf8mb4_bin), as in SQLite: topic "A" and topic "a" are two topics.

CREATE TABLE IF NOT EXISTS toc_jobs (
    job_id       BIGINT UNSIGNED  NOT NULL,
    topic        VARCHAR(64)      NOT NULL,
    idem_key     VARBINARY(128)   NULL,
    biz_id       BIGINT UNSIGNED  NOT NULL DEFAULT 0,
    biz_type     BIGINT UNSIGNED  NOT NULL DEFAULT 0,
    status       TINYINT UNSIGNED NOT NULL,
    action_time  BIGINT           NOT NULL,
    attempts     INT              NOT NULL DEFAULT 0,
    max_attempts INT              NOT NULL,
    last_error   VARCHAR(1024)    NOT NULL DEFAULT '',
    callback     VARCHAR(2048)    NOT NULL DEFAULT '',
    payload      MEDIUMBLOB       NULL,
    gmt_create   BIGINT           NOT NULL,
    gmt_modified BIGINT           NOT NULL,
    PRIMARY KEY (job_id),
    UNIQUE KEY toc_jobs_topic_key (topic, idem_key),
    KEY toc_jobs_status_due (status, action_time, job_id),
    KEY toc_jobs_topic_status (topic, status)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS toc_topics (
    name       VARCHAR(64) NOT NULL,
    slots      INT         NOT NULL,
    gmt_create BIGINT      NOT NULL,
    PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
