// Package jsondepth holds Pith's one limit on JSON nesting and the check
// for it.
//
// Session lines, client appends and plugin calls are untrusted input, and a
// recursive walk over JSON nested millions deep overflows the goroutine
// stack — a fatal error that Go cannot recover. Every walker over such
// input (the session line scanner, the header check, the strict client
// parser, the token estimator, compaction's JSON re-rendering) stops at
// Max, and the host API checks plugin input with Check before using it.
// Max is encoding/json's limit, so what Pith accepts, Go's own decoder
// accepts too.
package jsondepth
