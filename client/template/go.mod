// A Go agent in a module of its own, driving `pith serve` through
// github.com/pith-dev/pith/client. Copy this directory out of the Pith
// repository, rename the module, and point the replace at your checkout
// of Pith (README.md).
module example.com/my-pith-agent

go 1.26.0

require github.com/pith-dev/pith v0.0.0-00010101000000-000000000000

require (
	github.com/planetscale/vtprotobuf v0.6.1-0.20240319094008-0393e58bdf10 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261110000943-09e21b237f2c // indirect
	google.golang.org/grpc v1.85.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

// github.com/pith-dev/pith is not published yet, so the go command cannot
// fetch it by its path: it is read from this checkout instead. Once it is
// published, delete this line and require a released version.
replace github.com/pith-dev/pith => ../..
