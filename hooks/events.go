package hooks

// The event and result types, the event ids and the compaction reasons are
// generated from proto/pith/hooks/v1/hooks.proto into events_gen.go (make
// proto): the proto defines each event once, for every language.

// MaxInjectedMessages bounds how many messages one plugin may put after a
// compaction.
const MaxInjectedMessages = 8
