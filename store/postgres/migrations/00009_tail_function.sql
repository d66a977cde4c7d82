-- +goose Up
-- Tail in a function whose plan is made once per connection and kept.
-- As a statement, the catch-up pith serve runs before every call is
-- planned afresh at every call once the sessions have grown: the plan
-- cache weighs a generic plan, costed for "seq > $2" as a third of the
-- session, against custom ones, costed for the few lines past the end
-- they read, and keeps the custom ones, each planning costing more than
-- the reading (more as the table grows: the load test's Tail went from
-- no planning at all to a planning at every call within its first half
-- minute, 66-100 µs each). Here the plan is generic by rule, and
-- sequential and bitmap scans are off, so the primary key's (session,
-- seq) order is the one way in, whatever the tables held when the plan
-- was made: a generic plan as a statement reads the whole table when one
-- session is most of it. STABLE: both statements see the calling
-- statement's snapshot, as the join did. Rows as the join's: the count
-- with each line after p_after, one row with a NULL line when there is
-- none, no row when there is no session.
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

-- +goose Down
DROP FUNCTION pith_tail(text, bigint);
