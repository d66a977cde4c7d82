package server

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"unsafe"

	pb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// holdCases are answers of each kind the codec encodes differently.
func holdCases() map[string]any {
	file := []byte(strings.Repeat("m", 2*referAbove))
	var msgs [][]byte
	for at := 0; at+5000 <= len(file); at += 5000 {
		msgs = append(msgs, file[at:at+5000], file[at:at+10])
	}
	return map[string]any{
		"empty":            &pb.CloseSessionResponse{},
		"small":            &pb.OpenSessionResponse{SessionId: "s1", Path: "a.jsonl"},
		"large":            &pb.GetContextResponse{Messages: [][]byte{make([]byte, 100<<10)}, LeafId: "x"},
		"context referred": &pb.GetContextResponse{Messages: msgs, LeafId: "x", ContextTokens: 7},
		"typed nil":        (*pb.CloseSessionResponse)(nil),
		// Not generated with vtprotobuf: the registered codec's.
		"other codec": wrapperspb.String("x"),
	}
}

// TestAnswerHoldGivesSlotBackWithItsLastBuffer: a held answer's every
// buffer is one gRPC counts the references of (a plain slice would be
// freed without a word, and the slot given back before the answer left),
// and the slot comes back when the last of them is freed — not before,
// however gRPC's reader splits them into frames.
func TestAnswerHoldGivesSlotBackWithItsLastBuffer(t *testing.T) {
	h := startServer(t, testConfig(t.TempDir()))
	s := h.srv
	codec := answerCodec{encoding.GetCodecV2("proto")}
	key := slotKey{"tester", slotCall}
	for name, msg := range holdCases() {
		if err := s.takeSlot(key); err != nil {
			t.Fatal(err)
		}
		data, err := codec.Marshal(s.holdAnswer(key, nil, msg))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, b := range data {
			if _, plain := b.(mem.SliceBuffer); plain {
				t.Fatalf("%s: buffer %d of %d is not counted", name, i, len(data))
			}
		}
		// Read as the transport does, in frames of 16 KiB.
		r := data.Reader()
		data.Free() // the sender's reference, given up once queued
		frame := make([]byte, 16<<10)
		for r.Remaining() > 0 {
			if s.held("tester", slotCall) != 1 {
				t.Fatalf("%s: the slot came back with %d bytes still unsent", name, r.Remaining())
			}
			if _, err := r.Read(frame); err != nil {
				t.Fatal(err)
			}
		}
		r.Close()
		if got := s.held("tester", slotCall); got != 0 {
			t.Fatalf("%s: %d slots held once the answer was sent", name, got)
		}
	}
}

// TestAnswerHoldConnectionEnd: the end of a connection gives back the
// slots of the answers still on it, once: buffers freed later (or never)
// give nothing back twice, and an answer made after the end holds
// nothing.
func TestAnswerHoldConnectionEnd(t *testing.T) {
	h := startServer(t, testConfig(t.TempDir()))
	s := h.srv
	codec := answerCodec{encoding.GetCodecV2("proto")}
	key := slotKey{"tester", slotCall}
	conn := &connCalls{}
	var answers []mem.BufferSlice
	for name, msg := range holdCases() {
		if err := s.takeSlot(key); err != nil {
			t.Fatal(err)
		}
		data, err := codec.Marshal(s.holdAnswer(key, conn, msg))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		answers = append(answers, data)
	}
	if got := s.held("tester", slotCall); got != len(answers) {
		t.Fatalf("%d slots held, want %d", got, len(answers))
	}
	conn.end()
	if got := s.held("tester", slotCall); got != 0 {
		t.Fatalf("%d slots held after the connection ended", got)
	}
	// A slot taken since must outlive the old answers' buffers.
	if err := s.takeSlot(key); err != nil {
		t.Fatal(err)
	}
	for _, data := range answers {
		data.Free()
	}
	if got := s.held("tester", slotCall); got != 1 {
		t.Fatalf("%d slots held after the old answers were freed, want 1 (given back twice)", got)
	}
	if err := s.takeSlot(key); err != nil {
		t.Fatal(err)
	}
	late, err := codec.Marshal(s.holdAnswer(key, conn, &pb.CloseSessionResponse{}))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.held("tester", slotCall); got != 1 {
		t.Fatalf("an answer on an ended connection holds a slot (%d held, want 1)", got)
	}
	late.Free()
	s.giveSlot(key)
}

// TestAnswerHoldConnectionEndRace: a connection ending while its answers
// are being sent (their buffers freed on other goroutines) gives every
// slot back exactly once. Run with -race.
func TestAnswerHoldConnectionEndRace(t *testing.T) {
	h := startServer(t, testConfig(t.TempDir()))
	s := h.srv
	codec := answerCodec{encoding.GetCodecV2("proto")}
	key := slotKey{"tester", slotCall}
	// The sentinel: a slot no answer holds, there from start to end.
	if err := s.takeSlot(key); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		conn := &connCalls{}
		var answers []mem.BufferSlice
		for _, msg := range holdCases() {
			if err := s.takeSlot(key); err != nil {
				t.Fatal(err)
			}
			data, err := codec.Marshal(s.holdAnswer(key, conn, msg))
			if err != nil {
				t.Fatal(err)
			}
			answers = append(answers, data)
		}
		var wg sync.WaitGroup
		for _, data := range answers {
			wg.Go(data.Free)
		}
		wg.Go(conn.end)
		wg.Wait()
		if got := s.held("tester", slotCall); got != 1 {
			t.Fatalf("%d slots held, want the sentinel's 1", got)
		}
	}
	s.giveSlot(key)
}

// TestUnaryAuthGivesSlotBackWithoutAnswer: a call that fails, answers
// nil or panics has no answer to hold its slot; it is given back at once.
// So is the slot of a call on a connection the daemon does not follow
// (its end could not give the slot back).
func TestUnaryAuthGivesSlotBackWithoutAnswer(t *testing.T) {
	h := startServer(t, testConfig(t.TempDir()))
	s := h.srv
	info := &grpc.UnaryServerInfo{FullMethod: pb.SessionService_GetContext_FullMethodName}
	answer := func(context.Context, any) (any, error) { return &pb.GetContextResponse{}, nil }
	if resp, err := s.unaryAuth(context.Background(), nil, info, answer); err != nil {
		t.Fatal(err)
	} else if _, held := resp.(*answerHold); held || s.held("", slotCall) != 0 {
		t.Fatal("the answer of a call on a connection not followed holds its slot")
	}
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &connAddr{Addr: &net.TCPAddr{}, calls: &connCalls{}}})
	for name, handler := range map[string]grpc.UnaryHandler{
		"error": func(context.Context, any) (any, error) { return &pb.GetContextResponse{}, errors.New("failed") },
		"nil":   func(context.Context, any) (any, error) { return nil, nil },
		"panic": func(context.Context, any) (any, error) { panic("handler") },
	} {
		func() {
			defer func() { _ = recover() }()
			_, _ = s.unaryAuth(ctx, nil, info, handler)
		}()
		if got := s.held("", slotCall); got != 0 {
			t.Fatalf("%s: %d slots held", name, got)
		}
	}
	resp, err := s.unaryAuth(ctx, nil, info, answer)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := resp.(*answerHold); !ok || s.held("", slotCall) != 1 {
		t.Fatalf("an answer (%T) does not hold its slot (%d held)", resp, s.held("", slotCall))
	}
	data, err := answerCodec{encoding.GetCodecV2("proto")}.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	data.Free()
	if got := s.held("", slotCall); got != 0 {
		t.Fatalf("%d slots held after the answer was sent", got)
	}
}

// TestStreamHoldCarvesSmallMessages: a stream's small messages share
// pooled buffers (a 4 KiB one for many events, not one each), each
// encoded as proto.Marshal does; the stream's slot comes back once its
// handler has ended and every message it sent has been freed, in
// whatever order gRPC frees them.
func TestStreamHoldCarvesSmallMessages(t *testing.T) {
	h := startServer(t, testConfig(t.TempDir()))
	s := h.srv
	codec := answerCodec{encoding.GetCodecV2("proto")}
	key := slotKey{"tester", slotStream}
	if err := s.takeSlot(key); err != nil {
		t.Fatal(err)
	}
	hold := s.holdAnswer(key, &connCalls{}, nil)
	hold.stream = true
	var sent []mem.BufferSlice
	chunks := map[*byte]bool{}
	for i := range 100 {
		m := &pb.WatchEventsResponse{Event: &pb.Event{Kind: "entries_appended", SessionId: "s1", EntryId: strings.Repeat("e", i%40)}}
		hold.ref()
		hold.msg = m
		data, err := codec.Marshal(hold)
		if err != nil {
			t.Fatal(err)
		}
		want, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := data.Materialize(); !bytes.Equal(got, want) {
			t.Fatalf("message %d encoded as %x, want %x", i, got, want)
		}
		for _, b := range data {
			if _, plain := b.(mem.SliceBuffer); plain {
				t.Fatalf("message %d is not counted", i)
			}
		}
		chunks[unsafe.SliceData(hold.chunkData)] = true
		sent = append(sent, data)
	}
	if len(chunks) > 3 {
		t.Fatalf("100 small messages took %d buffers of %d bytes", len(chunks), chunkSize)
	}
	hold.endStream()
	if n := len(hold.chunkData); n != 0 {
		t.Fatal("the stream's chunk outlived its handler")
	}
	if got := s.held("tester", slotStream); got != 1 {
		t.Fatalf("%d slots held with 100 messages unsent", got)
	}
	// Freed from the middle out; the slot comes back with the last.
	for len(sent) > 0 {
		if s.held("tester", slotStream) != 1 {
			t.Fatalf("the slot came back with %d messages unsent", len(sent))
		}
		i := len(sent) / 2
		sent[i].Free()
		sent = append(sent[:i], sent[i+1:]...)
	}
	if got := s.held("tester", slotStream); got != 0 {
		t.Fatalf("%d slots held once every message was sent", got)
	}
}

// TestTrackConnsEndsWithTheConnection: the daemon's credentials give
// each connection a peer address carrying its connCalls, which its
// close ends (whatever closes it: gRPC does once done with it).
func TestTrackConnsEndsWithTheConnection(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	conn, _, err := trackConns{insecure.NewCredentials()}.ServerHandshake(a)
	if err != nil {
		t.Fatal(err)
	}
	addr, ok := conn.RemoteAddr().(*connAddr)
	if !ok {
		t.Fatalf("peer address %T, want the connection's", conn.RemoteAddr())
	}
	if addr.String() != a.RemoteAddr().String() {
		t.Fatalf("peer address %q, want %q", addr, a.RemoteAddr())
	}
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: conn.RemoteAddr()})
	calls := connCallsOf(ctx)
	if calls == nil || calls != addr.calls {
		t.Fatal("a call's context does not lead to its connection")
	}
	conn.Close()
	if calls.add(&answerHold{}) {
		t.Fatal("a closed connection still takes answers")
	}
}

// TestNoResponseCompressor: gRPC compresses an answer when its client
// asks and a compressor of that name is registered — into buffers of
// its own, freeing the codec's at once, so the answer would leave its
// slot before it left the daemon. None is registered (grpc's
// encoding/gzip is linked nowhere); linking one needs the hold to
// follow the compressed buffers first.
func TestNoResponseCompressor(t *testing.T) {
	for _, name := range []string{"gzip", "zstd", "snappy", "deflate"} {
		if encoding.GetCompressor(name) != nil {
			t.Fatalf("a %s compressor is registered: compressed answers would not hold their slots", name)
		}
	}
}

// An answer of 33 to 512 KiB holds a buffer of its size, not the 1 MiB
// gRPC's default pool hands out for it; small and large ones still come
// from the pool (at least their size, counted).
func TestAnswerHoldBufferSizes(t *testing.T) {
	h := &answerHold{}
	for _, n := range []int{0, 10, 2000, 32 << 10, 32<<10 + 1, 100 << 10, 512 << 10, 512<<10 + 1, 3 << 20} {
		b := h.pooled(n)
		if len(*b) != n || cap(*b) < max(n, pooledMin) {
			t.Fatalf("%d bytes: len %d cap %d", n, len(*b), cap(*b))
		}
		if n > 32<<10 && n <= 512<<10 && cap(*b) != n {
			t.Errorf("%d bytes: a buffer of %d", n, cap(*b))
		}
	}
}
