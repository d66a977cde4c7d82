package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pith-dev/pith/store"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestStoreErrorCodes: the store's sentinels reach a client as the codes
// documented in status.go, however deeply wrapped.
func TestStoreErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code codes.Code
		says string
	}{
		{store.ErrConflict, codes.Aborted, "read it again and retry"},
		{store.ErrLeaseHeld, codes.Aborted, "lease"},
		{store.ErrLeaseLost, codes.Aborted, "lease"},
		{store.ErrUnavailable, codes.Unavailable, "read the session before retrying"},
		{store.ErrNotFound, codes.NotFound, "no such session"},
		{store.ErrExists, codes.AlreadyExists, "already exists"},
		{store.ErrInvalidName, codes.InvalidArgument, "invalid session path"},
	} {
		err := toStatus(fmt.Errorf("session %q: append: %w", "a.jsonl", tc.err))
		st, _ := status.FromError(err)
		if st.Code() != tc.code || !strings.Contains(st.Message(), tc.says) {
			t.Errorf("%v → %s %q, want %s saying %q", tc.err, st.Code(), st.Message(), tc.code, tc.says)
		}
	}
}
