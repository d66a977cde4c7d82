package wire

import (
	"google.golang.org/grpc"
)

// ProtocolVersion is the go-plugin protocol version of proto/pith/hooks/v1.
// A new incompatible protocol gets a new number and is served side by side.
const ProtocolVersion = 1

// PluginName is the key of the hooks plugin in go-plugin's plugin set.
const PluginName = "hooks"

// MaxMessageSize bounds gRPC messages both ways. Sessions can be large and
// entries cross whole, so it is far above gRPC's 4 MiB default.
const MaxMessageSize = 256 << 20

// EnvHostPID names the environment variable carrying the host's pid, which
// the SDK's parent-death watchdog watches.
const EnvHostPID = "PITH_HOST_PID"

// CapabilityKey is the gRPC metadata key of the host-API capability: the
// host sends a token with each event call, and the SDK sends it back with
// the host-API calls made while serving that event. The host refuses
// host-API calls without a token of a call still running.
const CapabilityKey = "pith-capability"

// Handshake is the magic cookie that keeps a plugin binary from being run by
// hand and from being confused with another program's plugins. It has the
// fields of go-plugin's HandshakeConfig, which the host converts it to: the
// package does not import go-plugin, so that a plugin built with the SDK
// links none of it (go-plugin's server side brings net/rpc, gob, yamux and
// gRPC reflection, whose package initialisation alone is about a third of
// a plugin process's start).
var Handshake = HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "PITH_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "5b1c1d0e-pith-hooks-v1-8f3a2c77d9e4",
}

// HandshakeConfig is go-plugin's plugin.HandshakeConfig, field for field
// (TestHandshakeConfigIsGoPlugins), so that plugin.HandshakeConfig(h)
// converts it.
type HandshakeConfig struct {
	ProtocolVersion  uint
	MagicCookieKey   string
	MagicCookieValue string
}

// The rest of go-plugin's handshake, as a plugin process sees it: what the
// host puts in its environment and what it expects back on stdout
// (docs/protocol.md). Tests check them against go-plugin's own.
const (
	// CoreProtocolVersion is the first field of the handshake line.
	CoreProtocolVersion = 1
	// EnvProtocolVersions lists, comma-separated, the application
	// protocol versions the host speaks.
	EnvProtocolVersions = "PLUGIN_PROTOCOL_VERSIONS"
	// EnvUnixSocketDir is the private directory (mode 0700) the host made
	// for the plugin's socket.
	EnvUnixSocketDir = "PLUGIN_UNIX_SOCKET_DIR"
)

// ServerOptions raise the message limits of a gRPC server to MaxMessageSize.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(MaxMessageSize), grpc.MaxSendMsgSize(MaxMessageSize)}
}

// DialOptions raise the message limits of a gRPC client to MaxMessageSize.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(MaxMessageSize),
		grpc.MaxCallSendMsgSize(MaxMessageSize),
	)}
}

// NewServer is a gRPC server constructor with the raised limits (also for
// go-plugin: ServeConfig.GRPCServer, GRPCBroker.AcceptAndServe).
func NewServer(opts []grpc.ServerOption) *grpc.Server {
	return grpc.NewServer(append(opts, ServerOptions()...)...)
}

// NewPluginServer is NewServer for a plugin's own server, whose only peer is
// the host that started it: what it receives is decoded by the generated
// code rather than by protobuf-go (codec.go says what that changes).
func NewPluginServer(opts []grpc.ServerOption) *grpc.Server {
	return NewServer(append(opts, grpc.ForceServerCodecV2(codec{protobuf: protobufCodec, trustPeer: true})))
}
