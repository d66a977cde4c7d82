// Package builtin is the built-in summarizer, Pith's default: extractive
// and deterministic, with no model and no network. It implements
// core/summary's Summarizer and is its own package so that what uses it as
// a default (core/engine) does not link the HTTP summarizers of
// summarize.
package builtin
