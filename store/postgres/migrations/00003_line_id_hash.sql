-- +goose Up
-- A btree index refuses a row over 2704 bytes, and the id of an imported
-- line may be any length (the files store keeps such a file): a hash
-- index keeps only a hash of the id. It serves the one lookup by id, a
-- new id's check for a clash in its session.
DROP INDEX pith_lines_id;
CREATE INDEX pith_lines_id ON pith_lines USING hash (id) WHERE id <> ''::bytea;

-- +goose Down
DROP INDEX pith_lines_id;
CREATE INDEX pith_lines_id ON pith_lines (session, id) WHERE id <> ''::bytea;
