package wire

import "google.golang.org/grpc/encoding"

// TrustingCodec is the codec of NewPluginServer, for tests.
var TrustingCodec encoding.CodecV2 = codec{protobuf: protobufCodec, trustPeer: true}
