-- +goose Up
-- Which transaction last changed what, so a watch can find by itself what
-- changed since it last looked instead of trusting NOTIFY (which any role
-- that may connect can fill, and which a dropped listening connection
-- misses). A transaction id (xid8, never wrapping) is compared with the
-- snapshot the watch took last time: a change its snapshot did not see is
-- new to it, and each change is seen new exactly once. Ids are taken when
-- a transaction first writes, not when it commits, so no high-water mark
-- would do; the indexes serve "changed at or after the snapshot's xmin",
-- the only rows that can be new.
ALTER TABLE pith_sessions
	ADD COLUMN created_xid   xid8 NOT NULL DEFAULT pg_current_xact_id(),
	ADD COLUMN changed_xid   xid8 NOT NULL DEFAULT pg_current_xact_id(),
	-- NULL: never rewritten
	ADD COLUMN rewritten_xid xid8;
CREATE INDEX pith_sessions_changed ON pith_sessions (changed_xid);
ALTER TABLE pith_events ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX pith_events_xid ON pith_events (xid);

-- Kept by the table, not by each writer: every update of a session's row
-- (an append moves last_seq, a rewrite the rewrites count) stamps it, so
-- no write path can forget to, whichever version of Pith made it.
-- +goose StatementBegin
CREATE FUNCTION pith_sessions_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	NEW.changed_xid := pg_current_xact_id();
	IF NEW.rewrites IS DISTINCT FROM OLD.rewrites THEN
		NEW.rewritten_xid := NEW.changed_xid;
	END IF;
	RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER pith_sessions_stamp BEFORE UPDATE ON pith_sessions
	FOR EACH ROW EXECUTE FUNCTION pith_sessions_stamp();

-- +goose Down
DROP TRIGGER pith_sessions_stamp ON pith_sessions;
DROP FUNCTION pith_sessions_stamp();
DROP INDEX pith_events_xid;
ALTER TABLE pith_events DROP COLUMN xid;
DROP INDEX pith_sessions_changed;
ALTER TABLE pith_sessions DROP COLUMN rewritten_xid, DROP COLUMN changed_xid, DROP COLUMN created_xid;
