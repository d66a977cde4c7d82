-- +goose Up
-- How many times the session was rewritten: a rewrite's notification
-- carries the new count, and a watcher believes only a count the row has
-- reached and it has not seen (anyone who may connect can NOTIFY, and a
-- rewrite makes every host read the session whole).
ALTER TABLE pith_sessions ADD COLUMN rewrites bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE pith_sessions DROP COLUMN rewrites;
