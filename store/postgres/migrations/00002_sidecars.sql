-- +goose Up
-- A session's companions (the prune archive), written in the same
-- transaction as the rewrite they belong to, so an original is never
-- replaced without being kept.
CREATE TABLE pith_sidecars (
	session text NOT NULL REFERENCES pith_sessions (name) ON DELETE CASCADE,
	suffix  text NOT NULL,
	data    bytea NOT NULL,
	PRIMARY KEY (session, suffix)
);

-- +goose Down
DROP TABLE pith_sidecars;
