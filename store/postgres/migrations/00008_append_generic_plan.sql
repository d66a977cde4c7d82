-- +goose Up
-- pith_append's statements keep one plan per connection. Its check for
-- taken ids was planned afresh at about one call in three (the plan
-- cache weighing a generic plan against custom ones, each costed for the
-- call's ids), the planning costing more than the check. The generic
-- plan cannot be a wrong one here: the function turns sequential scans
-- off, so each statement has the one index it was written for, whatever
-- the tables held when the plan was made.
ALTER FUNCTION pith_append(text, text, bytea, bytea[], bytea[], bytea[], bytea[])
	SET plan_cache_mode = force_generic_plan;

-- +goose Down
ALTER FUNCTION pith_append(text, text, bytea, bytea[], bytea[], bytea[], bytea[])
	RESET plan_cache_mode;
