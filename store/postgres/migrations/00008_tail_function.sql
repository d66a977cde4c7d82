-- +goose Up
-- Tail in one function whose plan is made once per connection and kept,
-- and which cannot be a wrong one. As a statement, the catch-up pith
-- serve runs before every call was planned afresh at nearly every call:
-- the plan cache compares a generic plan, costed for "seq > $2" as a
-- third of the session, with custom ones, costed for the few lines past
-- the end they read, keeps the custom ones, and planning cost as much as
-- running the query. Here the plan is generic by rule, and sequential
-- and bitmap scans are off, so the primary key's (session, seq) order is
-- the one way in, whatever the tables held when the plan was made (a new
-- database). STABLE: one snapshot for both statements, as the join had.
-- Rows as the join's: the count with each line after p_after, one row
-- with a NULL line when there is none, no row when there is no session.
-- +goose StatementBegin
CREATE FUNCTION pith_tail(p_name text, p_after bigint)
RETURNS TABLE (last_seq bigint, raw bytea) LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_bitmapscan = off
AS $$
DECLARE
	v_seq bigint;
BEGIN
	SELECT s.last_seq INTO v_seq FROM pith_sessions s WHERE s.name = p_name;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	RETURN QUERY SELECT v_seq, l.raw FROM pith_lines l
		WHERE l.session = p_name AND l.seq > p_after ORDER BY l.seq;
	IF NOT FOUND THEN
		RETURN QUERY SELECT v_seq, NULL::bytea;
	END IF;
END
$$;
-- +goose StatementEnd

-- The same for the append's statements: its check for taken ids was
-- planned again at about one call in three, for the same reason.
ALTER FUNCTION pith_append(text, text, bytea, bytea[], bytea[], bytea[], bytea[])
	SET plan_cache_mode = force_generic_plan;

-- +goose Down
ALTER FUNCTION pith_append(text, text, bytea, bytea[], bytea[], bytea[], bytea[])
	RESET plan_cache_mode;
DROP FUNCTION pith_tail(text, bigint);
