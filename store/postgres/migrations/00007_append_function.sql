-- +goose Up
-- An append in one statement, so in one round trip and one implicit
-- transaction: it was seven (BEGIN, lock the session's row, mend a torn
-- last line, look for the new ids, COPY the lines, move the session's
-- row, COMMIT), each a wait for the database while the session's row
-- stayed locked, which is what bounded appends per second on a busy
-- host. The checks and their order are the ones the transaction made,
-- each statement here on a fresh snapshot as there (read committed):
-- the session exists (-1), the lease, when a holder is given, holds on
-- the database's clock (-2), the session is not in an old format (-3),
-- its last entry is the expected one (-4), no new id is taken in it
-- (-5: the caller draws others and calls again). Any refusal writes
-- nothing. With no lines it only checks. Otherwise it returns the line
-- number the new lines follow.
-- +goose StatementBegin
CREATE FUNCTION pith_append(p_name text, p_holder text, p_expect bytea,
	p_ids bytea[], p_parents bytea[], p_types bytea[], p_raws bytea[])
RETURNS bigint LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
DECLARE
	v_seq  bigint;
	v_last bytea;
	v_old  boolean;
BEGIN
	SELECT last_seq, last_id, old_format INTO v_seq, v_last, v_old
		FROM pith_sessions WHERE name = p_name FOR NO KEY UPDATE;
	IF NOT FOUND THEN
		RETURN -1;
	END IF;
	IF p_holder IS NOT NULL THEN
		-- clock_timestamp, not now(): the lease may run out while the
		-- row lock above is waited for
		PERFORM 1 FROM pith_leases
			WHERE session = p_name AND holder = p_holder AND expires_at > clock_timestamp()
			FOR UPDATE;
		IF NOT FOUND THEN
			RETURN -2;
		END IF;
	END IF;
	IF v_old THEN
		RETURN -3;
	END IF;
	IF v_last <> p_expect THEN
		RETURN -4;
	END IF;
	IF coalesce(cardinality(p_ids), 0) = 0 THEN
		RETURN v_seq;
	END IF;
	-- By the hash index on id, never along the session's lines: the
	-- plan a function keeps was made when the table was small (a new
	-- database), and the primary key's (session, …) looked as cheap,
	-- which reads the whole session at every append. The session is
	-- compared in a form no index serves, and the function turns
	-- sequential scans off, so the id is the one way in.
	PERFORM 1 FROM pith_lines
		WHERE id = ANY (p_ids) AND id <> ''::bytea AND (session = p_name) IS TRUE;
	IF FOUND THEN
		RETURN -5;
	END IF;
	-- Never glue a new line onto a line a crash left unfinished.
	UPDATE pith_lines SET raw = raw || '\x0a'::bytea
		WHERE session = p_name AND seq = v_seq AND get_byte(raw, length(raw) - 1) <> 10;
	INSERT INTO pith_lines (session, seq, id, parent_id, type, raw)
		SELECT p_name, v_seq + u.n, u.id, u.parent, u.type, u.raw
		FROM unnest(p_ids, p_parents, p_types, p_raws) WITH ORDINALITY AS u (id, parent, type, raw, n);
	UPDATE pith_sessions SET last_seq = v_seq + cardinality(p_ids), last_id = p_ids[cardinality(p_ids)]
		WHERE name = p_name;
	RETURN v_seq;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION pith_append(text, text, bytea, bytea[], bytea[], bytea[], bytea[]);
