-- +goose Up
CREATE TABLE pith_sessions (
	name       text PRIMARY KEY,
	last_seq   bigint NOT NULL,
	-- the id of the last entry in order ("" for none): what an append's
	-- expected parent is checked against
	last_id    bytea NOT NULL,
	-- a v1/v2 file, imported as it is: readable, but appends are refused
	-- until it is migrated (its ids exist only in memory)
	old_format boolean NOT NULL DEFAULT false,
	created_at timestamptz NOT NULL DEFAULT now()
);
-- One row per line, header included, each with its exact bytes (newline
-- included when the line had one), so an export is the imported file.
CREATE TABLE pith_lines (
	session   text NOT NULL REFERENCES pith_sessions (name) ON DELETE CASCADE,
	seq       bigint NOT NULL,
	-- bytea, not text: a line pi reads may hold ids with \u0000 or lone
	-- surrogates, which text columns refuse
	id        bytea NOT NULL,
	parent_id bytea NOT NULL,
	type      bytea NOT NULL,
	raw       bytea NOT NULL,
	PRIMARY KEY (session, seq)
);
CREATE INDEX pith_lines_id ON pith_lines (session, id) WHERE id <> ''::bytea;
CREATE TABLE pith_leases (
	session    text PRIMARY KEY REFERENCES pith_sessions (name) ON DELETE CASCADE,
	holder     text NOT NULL,
	expires_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE pith_leases;
DROP TABLE pith_lines;
DROP TABLE pith_sessions;
