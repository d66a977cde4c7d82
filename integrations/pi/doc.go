// Package pi holds Pith's extension for the pi coding agent (index.ts and
// src/, TypeScript, loaded by pi itself) and the Go tests that run the real
// pi (0.73.1, pinned in package-lock.json, installed by `npm ci` here) with
// it against loopback model servers and the real pith binary and plugins:
// pi in RPC and print mode for compactions, pi's SDK (test/sdk.mjs) for tree
// navigation and Escape. pi runs with an agent directory and HOME of its own
// under a temporary directory, offline, so nothing of the machine is read or
// written. There is no Go code to import here.
package pi
