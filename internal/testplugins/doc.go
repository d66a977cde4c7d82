// Package testplugins holds plugin binaries used by the tests of hooks/...
// and sdk/...: scripted, whose behaviour per event is set by flags, and
// guard, the complete plugin shown in sdk/README.md; automtls, a plugin
// built with plain go-plugin and its AutoMTLS (P-521), as older ones are;
// echo, which records every event and answers with every field set.
package testplugins
