// Package sdktest runs a Pith plugin inside a Go test: in-process (the
// handler value, through the same protobuf adaptation as a real plugin) or
// as a real subprocess started by the host's supervisor. Either way the test
// gets a Harness to send each event, the Dispatcher the host would use, and
// a FakeHost standing in for the host's API.
package sdktest
