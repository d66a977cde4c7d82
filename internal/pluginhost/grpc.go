package pluginhost

import (
	"context"

	"google.golang.org/grpc"
)

// grpcCall drops the variadic call options of a generated client method.
func grpcCall[Req, Resp any](m func(context.Context, Req, ...grpc.CallOption) (Resp, error)) func(context.Context, Req) (Resp, error) {
	return func(ctx context.Context, req Req) (Resp, error) { return m(ctx, req) }
}
