// Package sdk is what a Pith plugin author imports. A plugin is one or more
// handlers (BeforeCompactHandler, …; a function through its adapter, such
// as CompactFunc; or the Funcs bundle); its main function serves them with
// ServePlugin, one ServeOpts field per event, so that the compiler checks
// each handler's methods:
//
//	sdk.ServePlugin(sdk.ServeOpts{BeforeCompact: g, Compacting: g}, sdk.WithName("guard"))
//
// Serve, the older form, takes any value and checks it at start-up; it
// still works.
//
// The SDK hides go-plugin's protocol and gRPC (it speaks the protocol
// without linking go-plugin, whose server side would slow every plugin's
// start): it performs the handshake, reports the
// implemented events, turns panics into errors, exits when the host dies,
// logs to the host through Logger, and gives handlers the host's API
// through Host. Events cut to the plugin's limits say so (PathTruncated,
// LabelsTruncated, Preparation.MessagesTruncated, EntriesTruncated);
// ReadPath pages the rest.
//
// The SDK links no LLM client: a plugin that wants a completion asks the host
// (Host(ctx).Complete), which runs it on its configured summarizer.
package sdk
