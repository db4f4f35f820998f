-- The token of the last claim on each message, drawn at random by the courier that made it: a courier whose
-- claim was written but whose answer was lost asks again and finds the claim its own by this token, never by
-- its time, which two couriers can share to the millisecond.
alter table outbox add column claim_token bigint;
