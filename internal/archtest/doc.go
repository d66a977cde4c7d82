// Package archtest enforces the project's dependency direction as a test:
//   - the core (core/..., except the summarizers that speak HTTP) links no
//     net/http or crypto/tls;
//   - plugin binaries — every command that links the SDK, wherever it is —
//     and the light core packages link no LLM provider SDK, and plugin
//     binaries no go-plugin (whose server side the SDK does without);
//   - the pure core links neither go-plugin nor gRPC;
//   - the wire adapter (internal/wire) and the generated protobuf Go
//     (internal/gen) are imported only by the host, SDK and adapter
//     packages, and no public package's API exposes a type from internal/;
//   - nothing imports cmd/.
//
// The package's code reads the module's import graph from one
// `go list -deps -json` run (and, for the API check, the public packages'
// export data from one `go list -export` run) and checks rules against it;
// the test in archtest_test.go holds the rules themselves.
package archtest
