package wire

import (
	"fmt"

	"github.com/pith-dev/pith/internal/dispatch"
	"google.golang.org/protobuf/proto"
)

// CheckSize refuses, before it is sent, a message the wire would refuse
// (dispatch.ErrPayloadTooLarge). gRPC would fail the call anyway, but as a
// transport error that reads like the plugin's. Every host-side caller of
// a plugin — the supervisor and the SDK's in-process connection — checks
// through it.
func CheckSize(m proto.Message) error {
	var n int
	if vm, ok := m.(interface{ SizeVT() int }); ok {
		n = vm.SizeVT()
	} else {
		n = proto.Size(m)
	}
	if n > MaxMessageSize {
		return fmt.Errorf("%w: %d bytes, the maximum is %d", dispatch.ErrPayloadTooLarge, n, MaxMessageSize)
	}
	return nil
}
