// Package sdktest runs a Pith plugin inside a Go test: in-process (the
// handler value served in the test process and called over a real gRPC
// connection, as the host calls a subprocess) or as a real subprocess
// started by the host's supervisor. Either way the test gets a Harness to
// send each event, the Dispatcher the host would use, and a FakeHost
// standing in for the host's API.
package sdktest
