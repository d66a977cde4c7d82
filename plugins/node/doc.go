// Package nodeplugin holds a Pith hook plugin written in Node.js (plugin.js,
// started through plugin.sh) and the Go test that runs it through the host's
// plugin supervisor. It shows that the hook protocol is language-neutral:
// go-plugin's handshake line, AutoMTLS with a self-signed certificate, the
// gRPC health service and pith.hooks.v1.Hooks, with no Go SDK. There is no
// Go code to import here.
package nodeplugin
