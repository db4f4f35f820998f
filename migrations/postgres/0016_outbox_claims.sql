-- How often each message was claimed for a delivery attempt. A claim whose attempt was never recorded (degrade
-- killed while it posted) may have reached the receiver: the next attempt is a re-send, and says so where the
-- receiver cannot drop duplicates by the idempotency key (Slack).
alter table outbox add column claims bigint not null default 0;
