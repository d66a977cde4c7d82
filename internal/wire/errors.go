package wire

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrorFromStatus turns a plugin's gRPC status back into a plain error: the
// handler's message, with deadline and cancellation mapped to the context
// errors so that the Dispatcher classifies them.
func ErrorFromStatus(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	switch st.Code() {
	case codes.DeadlineExceeded:
		return fmt.Errorf("%s: %w", st.Message(), context.DeadlineExceeded)
	case codes.Canceled:
		return fmt.Errorf("%s: %w", st.Message(), context.Canceled)
	}
	return errors.New(st.Message())
}
