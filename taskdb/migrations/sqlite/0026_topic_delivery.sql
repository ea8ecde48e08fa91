-- toc:additive
-- 0026: where a topic's due jobs go (issue 36): '' for a webhook to each
-- job's callback URL, else a JSON object of the way (amqp, nats)
-- and its settings.
ALTER TABLE toc_topics ADD COLUMN delivery TEXT NOT NULL DEFAULT '';
