package reattach

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	good := `{"Protocol":"grpc","ProtocolVersion":1,"Pid":42,"Test":true,"Addr":{"Network":"unix","String":"/tmp/plugin1"}}`
	c, err := Parse(EnvPrefix + "=" + good + "\n")
	if err != nil || c.Pid != 42 || c.Addr.String != "/tmp/plugin1" {
		t.Fatalf("Parse = %+v, %v", c, err)
	}
	line, err := c.Line()
	if err != nil || line != EnvPrefix+"="+good {
		t.Fatalf("Line = %q, %v", line, err)
	}
	if _, err := Parse(`{"Protocol":"grpc","ProtocolVersion":1,"Pid":42,"Addr":{"Network":"tcp","String":"127.0.0.1:4000"}}`); err != nil {
		t.Fatalf("loopback tcp: %v", err)
	}
	for _, bad := range []string{
		``, `[]`, `{"Protocol":"netrpc","ProtocolVersion":1,"Pid":1,"Addr":{"Network":"unix","String":"/s"}}`,
		`{"Protocol":"grpc","Pid":1,"Addr":{"Network":"unix","String":"/s"}}`,
		`{"Protocol":"grpc","ProtocolVersion":1,"Addr":{"Network":"unix","String":"/s"}}`,
		`{"Protocol":"grpc","ProtocolVersion":1,"Pid":1,"Addr":{"Network":"udp","String":"/s"}}`,
		`{"Protocol":"grpc","ProtocolVersion":1,"Pid":1,"Addr":{"Network":"unix","String":""}}`,
		`{"Protocol":"grpc","ProtocolVersion":1,"Pid":1,"Addr":{"Network":"tcp","String":"10.0.0.1:4000"}}`,
		`{"Protocol":"grpc","ProtocolVersion":1,"Pid":1,"Addr":{"Network":"unix","String":"/s"},"Extra":1}`,
		`{"Protocol":"grpc","ProtocolVersion":1,"Pid":1,"Addr":{"Network":"unix","String":"/s"}} {}`,
	} {
		if _, err := Parse(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}
