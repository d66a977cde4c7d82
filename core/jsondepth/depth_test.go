package jsondepth_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/jsondepth"
)

// nested is n arrays, one inside the other, around a string that holds
// brackets (which must not count).
func nested(n int) []byte {
	return []byte(strings.Repeat("[", n) + `"[[{\"]"` + strings.Repeat("]", n))
}

func TestCheckAgreesWithEncodingJSON(t *testing.T) {
	for _, n := range []int{0, 1, 100, jsondepth.Max - 1, jsondepth.Max, jsondepth.Max + 1, 3 * jsondepth.Max} {
		raw := nested(n)
		err := jsondepth.Check(raw)
		if ok := err == nil; ok != json.Valid(raw) {
			t.Errorf("depth %d: Check = %v, encoding/json valid = %v", n, err, json.Valid(raw))
		}
		if n > jsondepth.Max && !errors.Is(err, jsondepth.ErrTooDeep) {
			t.Errorf("depth %d: %v, want ErrTooDeep", n, err)
		}
	}
}

// TestCheckHuge runs Check over 30 million open brackets: no recursion,
// so no stack to overflow.
func TestCheckHuge(t *testing.T) {
	raw := []byte(strings.Repeat(`[`, 30_000_000))
	if err := jsondepth.Check(raw); !errors.Is(err, jsondepth.ErrTooDeep) {
		t.Fatalf("Check = %v, want ErrTooDeep", err)
	}
}

func TestCheckObjects(t *testing.T) {
	deep := strings.Repeat(`{"k":`, jsondepth.Max) + "1" + strings.Repeat("}", jsondepth.Max)
	if err := jsondepth.Check([]byte(deep)); err != nil {
		t.Errorf("depth Max: %v", err)
	}
	if err := jsondepth.Check([]byte(`{"k":` + deep + `}`)); err == nil {
		t.Error("depth Max+1 accepted")
	}
}
