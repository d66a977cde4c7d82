package server

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// rawH2 is a gRPC client written at the HTTP/2 frame level, for what
// grpc-go's client will not do: grant the daemon no flow-control window
// at all (so no answer's data can leave it), or open streams past the
// daemon's SETTINGS_MAX_CONCURRENT_STREAMS. One goroutine (the test's)
// writes and reads.
type rawH2 struct {
	t    *testing.T
	conn net.Conn
	fr   *http2.Framer
	hbuf bytes.Buffer
	enc  *hpack.Encoder
	addr string
	next uint32
	// first is each stream's first HEADERS frame from the daemon, rst
	// its RST_STREAM.
	first map[uint32]*http2.MetaHeadersFrame
	rst   map[uint32]http2.ErrCode
	// data counts the bytes of DATA each stream received.
	data  map[uint32]int
	pings uint64
}

// dialRawH2 connects to addr with window as every stream's initial
// flow-control window.
func dialRawH2(t *testing.T, addr string, window uint32) *rawH2 {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	// A bound on a test that fails, not a timed assertion: a frame the
	// daemon never sends fails the test instead of hanging it.
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	r := &rawH2{t: t, conn: conn, addr: addr, next: 1, first: map[uint32]*http2.MetaHeadersFrame{}, rst: map[uint32]http2.ErrCode{}, data: map[uint32]int{}}
	r.enc = hpack.NewEncoder(&r.hbuf)
	t.Cleanup(r.close)
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	r.fr = http2.NewFramer(conn, conn)
	r.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := r.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: window}); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rawH2) close() { r.conn.Close() }

// call opens a stream calling method: its headers, then req (nil: no
// request at all, the stream left open), ending the stream when end.
func (r *rawH2) call(method string, req proto.Message, end bool) uint32 {
	r.t.Helper()
	id := r.next
	r.next += 2
	r.hbuf.Reset()
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", method}, {":authority", r.addr},
		{"content-type", "application/grpc"}, {"te", "trailers"}} {
		if err := r.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
			r.t.Fatal(err)
		}
	}
	if err := r.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: r.hbuf.Bytes(), EndHeaders: true}); err != nil {
		r.t.Fatal(err)
	}
	if req != nil {
		b, err := proto.Marshal(req)
		if err != nil {
			r.t.Fatal(err)
		}
		msg := make([]byte, 5+len(b))
		binary.BigEndian.PutUint32(msg[1:], uint32(len(b)))
		copy(msg[5:], b)
		if err := r.fr.WriteData(id, end, msg); err != nil {
			r.t.Fatal(err)
		}
	}
	return id
}

// readUntil reads the daemon's frames, answering its settings and
// pings, until done says so.
func (r *rawH2) readUntil(done func(http2.Frame) bool) {
	r.t.Helper()
	for {
		f, err := r.fr.ReadFrame()
		if err != nil {
			r.t.Fatalf("reading the daemon's frames: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if err := r.fr.WriteSettingsAck(); err != nil {
					r.t.Fatal(err)
				}
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				if err := r.fr.WritePing(true, f.Data); err != nil {
					r.t.Fatal(err)
				}
			}
		case *http2.GoAwayFrame:
			r.t.Fatalf("the daemon closed the connection: %v", f.ErrCode)
		case *http2.DataFrame:
			r.data[f.StreamID] += len(f.Data())
		case *http2.RSTStreamFrame:
			r.rst[f.StreamID] = f.ErrCode
		case *http2.MetaHeadersFrame:
			if r.first[f.StreamID] == nil {
				r.first[f.StreamID] = f
			}
		}
		if done(f) {
			return
		}
	}
}

// answerHeaders waits for the daemon's first HEADERS frame on stream id:
// nil when it is an answer's (its data to follow), else the status of a
// trailers-only response (the call refused or failed).
func (r *rawH2) answerHeaders(id uint32) *status.Status {
	r.t.Helper()
	r.readUntil(func(http2.Frame) bool { return r.first[id] != nil || r.rst[id] != 0 })
	if code, ok := r.rst[id]; ok {
		r.t.Fatalf("stream %d reset: %v", id, code)
	}
	f := r.first[id]
	code := f.PseudoValue("status")
	grpcStatus := ""
	msg := ""
	for _, hf := range f.RegularFields() {
		switch hf.Name {
		case "grpc-status":
			grpcStatus = hf.Value
		case "grpc-message":
			msg = hf.Value
		}
	}
	if code != "200" {
		r.t.Fatalf("stream %d: HTTP status %q", id, code)
	}
	if grpcStatus == "" {
		return nil
	}
	n, err := strconv.Atoi(grpcStatus)
	if err != nil {
		r.t.Fatalf("stream %d: grpc-status %q", id, grpcStatus)
	}
	return status.New(codes.Code(n), msg)
}

// refusedBeforePing pings the daemon and reads until its answer: the
// daemon handles frames in order, so every stream it refuses among
// those opened before has been reset by then. The streams refused
// (REFUSED_STREAM) are true.
func (r *rawH2) refusedBeforePing() map[uint32]bool {
	r.t.Helper()
	r.pings++
	var data [8]byte
	binary.BigEndian.PutUint64(data[:], r.pings)
	if err := r.fr.WritePing(false, data); err != nil {
		r.t.Fatal(err)
	}
	r.readUntil(func(f http2.Frame) bool {
		p, ok := f.(*http2.PingFrame)
		return ok && p.IsAck() && p.Data == data
	})
	refused := map[uint32]bool{}
	for id, code := range r.rst {
		refused[id] = code == http2.ErrCodeRefusedStream
	}
	return refused
}

// earlyStatus is the status of a trailers-only response the daemon sent
// on stream id among the frames read so far, or nil for none.
func (r *rawH2) earlyStatus(id uint32) *status.Status {
	f := r.first[id]
	if f == nil {
		return nil
	}
	for _, hf := range f.RegularFields() {
		if hf.Name == "grpc-status" {
			n, err := strconv.Atoi(hf.Value)
			if err != nil {
				r.t.Fatalf("stream %d: grpc-status %q", id, hf.Value)
			}
			return status.New(codes.Code(n), "")
		}
	}
	return nil
}
