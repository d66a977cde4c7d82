package admission

import (
	"net"
	"testing"
)

// BenchmarkTake is what every viewer stream pays: one hold taken and
// given back through its release function.
func BenchmarkTake(b *testing.B) {
	var c Counter[string]
	caps := Caps{Total: 1 << 20, PerKey: 1 << 20}
	b.ReportAllocs()
	for b.Loop() {
		release, err := c.Take("127.0.0.1", caps)
		if err != nil {
			b.Fatal(err)
		}
		release()
	}
}

// BenchmarkAcquire is what every accepted connection and every call of
// the daemon pays: one hold taken and given back, with no function made.
func BenchmarkAcquire(b *testing.B) {
	var c Counter[string]
	caps := Caps{Total: 1 << 20, PerKey: 1 << 20}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Acquire("127.0.0.1", caps); err != nil {
			b.Fatal(err)
		}
		c.Release("127.0.0.1")
	}
}

// BenchmarkAccept dials and accepts one loopback connection per
// iteration, through Listen (bounded) and on the bare listener.
func BenchmarkAccept(b *testing.B) {
	for _, bounded := range []bool{false, true} {
		name := "bare"
		if bounded {
			name = "bounded"
		}
		b.Run(name, func(b *testing.B) {
			inner, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			var l net.Listener = inner
			if bounded {
				l = Listen(inner, Options{Caps: Caps{Total: 1 << 20, PerKey: 1 << 20}})
			}
			defer l.Close()
			b.ReportAllocs()
			for b.Loop() {
				c, err := net.Dial("tcp", l.Addr().String())
				if err != nil {
					b.Fatal(err)
				}
				s, err := l.Accept()
				if err != nil {
					b.Fatal(err)
				}
				s.Close()
				c.Close()
			}
		})
	}
}
