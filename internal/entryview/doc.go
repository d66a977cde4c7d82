// Package entryview owns how an entry is shown to a person: the one-line
// description of an entry, the preview of a message, and the display order
// and indentation of the entry tree. `pith tree`, `pith context` and the web
// viewer all show entries through it, so they describe a session alike.
package entryview
