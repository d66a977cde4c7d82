package server

import (
	"sync/atomic"

	"google.golang.org/grpc/mem"
)

// answerHold is a call's slot of server.maxCallsInFlight while its answer
// is on its way out. gRPC sends a unary call's answer after its handler
// returned, and keeps the encoded bytes until the client has read them
// (HTTP/2 flow control): a client that never reads leaves them queued in
// the transport, for as long as its connection lasts. Given back when the
// handler returned, the slot bounded nothing there — a client sending
// calls and reading no answer made the daemon hold any number of them (a
// GetContext answer referring to a session's messages kept that session's
// whole buffer alive across a close and a reopen: 11.9 MB per call of a
// 12 MB session).
//
// So unaryAuth hands the handler's answer to the codec inside its hold
// instead of giving the slot back, and the slot is given back once every
// buffer the answer was encoded into is freed — gRPC frees them when
// their last byte is written, when the stream is reset or cancelled, or
// when sending fails — or when the connection ends (connCalls: gRPC does
// not free what it queued on a connection that failed), whichever comes
// first, exactly once.
//
// The hold is the pool of the answer's buffers (mem.NewBuffer): a buffer
// whose last reference is freed is "put back", which counts the hold down.
// Every buffer of a held answer is such a buffer — mem.NewBuffer makes
// one only for a capacity past gRPC's pooling threshold (1 KiB), so a
// small answer is encoded into a pooled buffer of 4 KiB rather than one
// of its size: the slot then bounds the small answers too. (gRPC would
// compress an answer into buffers of its own and free these at once; no
// compressor is registered, TestNoResponseCompressor.)
type answerHold struct {
	// slots and key are the admission hold given back: the caller's
	// slot (nil: none, the codec called outside a call).
	slots *callerSlots
	key   slotKey
	conn  *connCalls // nil: no connection to follow (in-process use)
	msg   any        // the handler's answer

	// left counts the answer's buffers gRPC still holds, plus one until
	// the codec has encoded it (on a stream: plus one until its handler
	// returned, and one per message being encoded).
	left atomic.Int32
	done atomic.Bool

	// On a stream, its small messages are carved from one pooled
	// buffer after the other (chunk, used up to used) rather than each
	// taking a buffer of 4 KiB: a stream its client does not read has
	// up to 64 KiB of messages queued (gRPC's write quota counts their
	// length), which took 1.3 MB in events of 200 bytes. Only the
	// stream's sender touches them (gRPC allows one SendMsg at a time).
	stream    bool
	chunk     mem.Buffer
	chunkData []byte
	used      int
}

// chunkSize is the size of the buffers a stream's small messages are
// carved from (a tier of gRPC's default pool).
const chunkSize = 4 << 10

// carves reports whether a message of n bytes is carved from the
// stream's chunk.
func (h *answerHold) carves(n int) bool { return h.stream && n < pooledMin }

// carve is room for a message of n bytes in the stream's chunk (a new
// one when it is full): dst to encode it into, and the buffer of the
// answer that views it.
func (h *answerHold) carve(n int) (dst []byte, buf mem.Buffer) {
	if h.chunk == nil || h.used+n > len(h.chunkData) {
		h.dropChunk()
		b := h.pooled(chunkSize)
		h.chunkData, h.chunk, h.used = *b, h.buffer(b), 0
	}
	dst = h.chunkData[h.used : h.used+n]
	buf = h.chunk.Slice(h.used, h.used+n)
	h.used += n
	return dst, buf
}

// dropChunk lets go of the stream's own reference to its chunk: it goes
// back to the pool once the messages carved from it are sent.
func (h *answerHold) dropChunk() {
	if h.chunk != nil {
		h.chunk.Free()
		h.chunk, h.chunkData = nil, nil
	}
}

// endStream is the end of the stream's handler: no message will be
// carved any more, and only the buffers still queued hold the slot.
func (h *answerHold) endStream() {
	h.dropChunk()
	h.unref()
}

// holdAnswer is the hold of the slot key, taken by a call that answered
// msg on conn; the codec encodes msg and the hold gives the slot back.
func (s *Server) holdAnswer(key slotKey, conn *connCalls, msg any) *answerHold {
	h := &answerHold{slots: &s.slots, key: key, conn: conn, msg: msg}
	h.left.Store(1)
	if conn != nil && !conn.add(h) {
		// The connection ended already: nothing will be sent.
		h.release()
	}
	return h
}

// ref counts one more buffer of the answer, before it is made.
func (h *answerHold) ref() { h.left.Add(1) }

// unref counts one buffer of the answer (or its encoding) done; the last
// gives the slot back.
func (h *answerHold) unref() {
	if h.left.Add(-1) == 0 {
		h.release()
	}
}

// release gives the slot back, once, whoever calls first: the last
// buffer freed, or the end of the connection.
func (h *answerHold) release() {
	if h.done.Swap(true) {
		return
	}
	if h.conn != nil {
		h.conn.forget(h)
	}
	if h.slots != nil {
		h.slots.Release(h.key)
	}
}

// Get and Put make the hold the mem.BufferPool of the buffers it lends
// the answer from gRPC's default pool: Put returns one there, and counts
// the hold down.
func (h *answerHold) Get(n int) *[]byte { return mem.DefaultBufferPool().Get(n) }

func (h *answerHold) Put(b *[]byte) {
	mem.DefaultBufferPool().Put(b)
	h.unref()
}

// referredPool is the hold as the "pool" of the buffers that refer to
// bytes the answer does not own (a session's messages, shared with the
// engine): Put only counts the hold down.
type referredPool answerHold

func (p *referredPool) Get(n int) *[]byte { return mem.DefaultBufferPool().Get(n) }

func (p *referredPool) Put(*[]byte) { (*answerHold)(p).unref() }

// pooled is a buffer of n bytes for h to count: n or more in capacity,
// and never under the pooling threshold, so that mem.NewBuffer makes it a
// counted buffer. It comes from gRPC's default pool, except where that
// pool's tiers round up far: they jump from 32 KiB to 1 MiB, so an answer
// of 33 to 512 KiB held a buffer of 1 MiB while unread, up to
// server.maxCallsInFlight of them per caller. Those are made to measure
// (returned to the pool when freed, which files a buffer by its
// capacity).
func (h *answerHold) pooled(n int) *[]byte {
	if n > roundsUpFrom && n <= roundsUpTo {
		b := make([]byte, n)
		return &b
	}
	b := mem.DefaultBufferPool().Get(max(n, pooledMin))
	*b = (*b)[:n]
	return b
}

// The sizes gRPC's default pool hands a buffer of 1 MiB for: past its
// 32 KiB tier, and up to half its 1 MiB one.
const (
	roundsUpFrom = 32 << 10
	roundsUpTo   = 512 << 10
)

// buffer makes b (from pooled) a buffer of the answer.
func (h *answerHold) buffer(b *[]byte) mem.Buffer {
	h.ref()
	return mem.NewBuffer(b, h)
}

// refer makes m, bytes the answer does not own, a buffer of the answer.
// m's capacity must be past the pooling threshold (referable).
func (h *answerHold) refer(m *[]byte) mem.Buffer {
	h.ref()
	return mem.NewBuffer(m, (*referredPool)(h))
}

// pooledMin is the least capacity mem.NewBuffer counts the references of.
const pooledMin = 1<<10 + 1

// referable reports whether a buffer can refer to m (mem.NewBuffer counts
// the references of a buffer of its capacity).
func referable(m []byte) bool { return !mem.IsBelowBufferPoolingThreshold(cap(m)) }
