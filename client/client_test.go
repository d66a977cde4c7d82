package client

import (
	"context"
	"crypto/tls"
	"errors"
	"testing"

	pb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestWrapMapsCodes(t *testing.T) {
	tests := []struct {
		code codes.Code
		want error
	}{
		{codes.NotFound, ErrNotFound},
		{codes.InvalidArgument, ErrInvalidArgument},
		{codes.PermissionDenied, ErrPermissionDenied},
		{codes.AlreadyExists, ErrAlreadyExists},
		{codes.FailedPrecondition, ErrFailedPrecondition},
		{codes.Canceled, ErrCancelled},
		{codes.DeadlineExceeded, ErrCancelled},
		{codes.Aborted, ErrAborted},
		{codes.Unavailable, ErrUnavailable},
		{codes.Unauthenticated, ErrUnauthenticated},
		{codes.ResourceExhausted, ErrResourceExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.code.String(), func(t *testing.T) {
			err := wrap("open x", status.Error(tt.code, "what went wrong"))
			if !errors.Is(err, tt.want) {
				t.Fatalf("%v does not match %v", err, tt.want)
			}
			if got, want := err.Error(), "open x: "+tt.want.Error()+": what went wrong"; got != want {
				t.Errorf("message %q, want %q", got, want)
			}
		})
	}
	if got := wrap("append", status.Error(codes.Internal, "disk full")).Error(); got != "append: disk full" {
		t.Errorf("internal error: %q", got)
	}
}

func TestUnreachableDaemon(t *testing.T) {
	c, err := Dial("unix:/nonexistent/pith.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Open(context.Background(), "s.jsonl"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
}

func TestTokenNeverInClearTextOffLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:7420":       true,
		"localhost:7420":       true,
		"[::1]:7420":           true,
		"unix:/run/pith.sock":  true,
		"10.0.0.2:7420":        false,
		"pith.example.com:443": false,
		":7420":                false,
	} {
		c, err := Dial(addr, WithToken("t"))
		if ok != (err == nil) {
			t.Errorf("Dial(%s) with a token and no TLS: %v", addr, err)
		}
		if c != nil {
			c.Close()
		}
	}
	c, err := Dial("pith.example.com:443", WithToken("t"), WithTLS(&tls.Config{}))
	if err != nil {
		t.Fatalf("token over TLS: %v", err)
	}
	c.Close()
	if _, err := Dial("x:1", WithTLSFiles("/nonexistent/ca.pem", "", "")); err == nil {
		t.Fatal("a missing CA file was accepted")
	}
}

// TestWrapSaysTheKindOnce: the daemon's messages start with their kind
// ("unauthenticated: unknown or revoked token"); the error names it once.
func TestWrapSaysTheKindOnce(t *testing.T) {
	err := wrap("open s1", status.Error(codes.Unauthenticated, "unauthenticated: unknown or revoked token"))
	if !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("%v does not match ErrUnauthenticated", err)
	}
	if got, want := err.Error(), "open s1: unauthenticated: unknown or revoked token"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

// TestWrapMatchesReasons: an error with an ErrorInfo reason matches its
// code's sentinel and the reason's, reads as without it, and every
// reason of session.proto has one.
func TestWrapMatchesReasons(t *testing.T) {
	for v, name := range pb.ErrorReason_name {
		if pb.ErrorReason(v) == pb.ErrorReason_ERROR_REASON_UNSPECIFIED {
			continue
		}
		want, ok := reasons[name]
		if !ok {
			t.Errorf("reason %s has no error", name)
			continue
		}
		st, err := status.New(codes.FailedPrecondition, "refused").WithDetails(&errdetails.ErrorInfo{Reason: name, Domain: errorDomain()})
		if err != nil {
			t.Fatal(err)
		}
		got := wrap("compact x", st.Err())
		if !errors.Is(got, want) || !errors.Is(got, ErrFailedPrecondition) {
			t.Errorf("%s: %v does not match %v and %v", name, got, want, ErrFailedPrecondition)
		}
		if got.Error() != "compact x: failed precondition: refused" {
			t.Errorf("%s: message %q", name, got)
		}
	}
	// Another domain's reason is not the daemon's.
	st, _ := status.New(codes.FailedPrecondition, "refused").WithDetails(&errdetails.ErrorInfo{Reason: "ERROR_REASON_NOTHING_TO_COMPACT", Domain: "example.com"})
	if err := wrap("compact x", st.Err()); errors.Is(err, ErrNothingToCompact) {
		t.Error("a reason of another domain matched")
	}
}
