// Package archtest enforces the dependency rules of ARCHITECTURE.md
// ("Dependency direction") as a test: the light core packages and
// everything a plugin binary links stay free of LLM provider SDKs, the pure
// core stays free of go-plugin and gRPC, nothing imports cmd/, and the
// generated hooks protobuf package stays behind its adapter packages.
//
// The package's code reads the module's import graph from one
// `go list -deps -json` run and checks rules against it; the test in
// archtest_test.go holds the rules themselves.
package archtest
