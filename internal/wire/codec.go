package wire

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
)

// The gRPC codec for "proto" is replaced, in every process that links this
// package (the host, the daemon, the SDK's plugins), by one that encodes
// the Pith messages with the code vtprotobuf generates next to them
// (internal/gen/.../*_vtproto.pb.go) and everything else — go-plugin's
// broker, stdio and controller messages, the health service — with the
// codec it replaces.
//
// protobuf-go's own codec is driven by reflection tables it builds lazily,
// per message type, on the first message of that type a process handles.
// A plugin lives for one CLI command and handles each type about once, so
// that set-up was most of the CPU of its first call (~0.7 ms for the
// before-compact request); the generated code needs none, and it is faster
// on every call after (internal/pluginhost BenchmarkOneCall). The bytes on the
// wire are the same (TestCodecMatchesGolden): plugins in other languages
// see no change.
//
// Decoding is where the two differ: protobuf-go refuses a string field that
// is not valid UTF-8, the generated code does not check. What a process
// receives from a peer it does not trust — the host from its plugins, the
// daemon from its clients — is therefore still decoded by protobuf-go;
// only a plugin's own server (NewPluginServer, which the SDK uses), whose
// peer is the host that started it, decodes with the generated code too.
func init() {
	encoding.RegisterCodecV2(codec{protobuf: protobufCodec})
}

// protobufCodec is gRPC's own codec for "proto", taken before this
// package's registration replaces it.
var protobufCodec = encoding.GetCodecV2(codecName)

// codecName is the name gRPC looks the codec up by: the default content
// subtype, so that no peer has to ask for it.
const codecName = "proto"

// vtMessage is what vtprotobuf generates for a message (features marshal,
// unmarshal and size).
type vtMessage interface {
	SizeVT() int
	MarshalToSizedBufferVT([]byte) (int, error)
	UnmarshalVT([]byte) error
}

// codec encodes with the generated code; it decodes with it only when
// trustPeer, with protobuf-go otherwise.
type codec struct {
	protobuf  encoding.CodecV2
	trustPeer bool
}

func (c codec) Name() string { return codecName }

// Lent is an answer a server's handler returns for the codec to encode
// into a buffer from Pool instead of gRPC's default pool, when it is large
// enough to be pooled: gRPC frees the buffer (Pool.Put) once its last byte
// is written, or the call is reset. pluginhost counts so what a plugin's
// host-API connection has left unread.
type Lent struct {
	Msg  any
	Pool mem.BufferPool
}

// Marshal encodes v into one buffer of exactly its size, from gRPC's pool
// (or a Lent's) when it is large enough to be worth pooling (gRPC frees it
// once sent).
func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	pool := mem.DefaultBufferPool()
	if l, ok := v.(Lent); ok {
		v, pool = l.Msg, l.Pool
	}
	m, ok := v.(vtMessage)
	if !ok {
		return c.protobuf.Marshal(v)
	}
	size := m.SizeVT()
	if mem.IsBelowBufferPoolingThreshold(size) {
		buf := make([]byte, size)
		if _, err := m.MarshalToSizedBufferVT(buf); err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(buf)}, nil
	}
	buf := pool.Get(size)
	if _, err := m.MarshalToSizedBufferVT(*buf); err != nil {
		pool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

// Unmarshal decodes data into v. The generated code copies every string
// and bytes field out of data, so the buffer goes back to the pool here.
func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(vtMessage)
	if !ok || !c.trustPeer {
		return c.protobuf.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return m.UnmarshalVT(buf.ReadOnlyData())
}
