-- toc:additive
-- 0026: where a topic's due jobs go (issue 36): '' for a webhook to each
-- job's callback URL, else a JSON object of the way (amqp, nats)
-- and its settings. toc_topics is small: the column is added in place.
ALTER TABLE toc_topics
    ADD COLUMN IF NOT EXISTS delivery VARCHAR(1024) NOT NULL DEFAULT '',
    ALGORITHM = NOCOPY, LOCK = NONE;
