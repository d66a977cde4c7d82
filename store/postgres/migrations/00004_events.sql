-- +goose Up
-- What hosts publish (Publish), kept a while: the notification carries
-- only the row's id and a watcher reads the event from here. NOTIFY takes
-- no privilege beyond connecting to the database, so an event is
-- believed only when its row exists, written by a role that may write.
CREATE TABLE pith_events (
	id      bigserial PRIMARY KEY,
	session text NOT NULL,
	payload bytea NOT NULL,
	at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX pith_events_at ON pith_events (at);

-- +goose Down
DROP TABLE pith_events;
