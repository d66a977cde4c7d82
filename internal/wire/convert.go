package wire

import (
	"encoding/json"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
)

// The conversions of the events and results are generated from the proto
// into convert_gen.go; these carry raw JSON and the other enumerations.

func rawsToBytes(in []json.RawMessage) [][]byte {
	if len(in) == 0 {
		return nil
	}
	out := make([][]byte, len(in))
	for i, m := range in {
		out[i] = m
	}
	return out
}

func bytesToRaws(in [][]byte) []json.RawMessage {
	if len(in) == 0 {
		return nil
	}
	out := make([]json.RawMessage, len(in))
	for i, b := range in {
		out[i] = b
	}
	return out
}

func raw(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return b
}

// EventsToStrings converts event ids for Describe.
func EventsToStrings(ids []hooks.EventID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out
}

// EventsFromStrings keeps the known event ids of a Describe answer and
// returns the unknown ones separately (a newer plugin may list more).
func EventsFromStrings(in []string) (known []hooks.EventID, unknown []string) {
	for _, s := range in {
		if id := hooks.EventID(s); id.Valid() {
			known = append(known, id)
		} else {
			unknown = append(unknown, s)
		}
	}
	return known, unknown
}

// LogLevelToProto maps an hclog level.
func LogLevelToProto(l hclog.Level) pb.LogLevel {
	switch l {
	case hclog.Trace:
		return pb.LogLevel_LOG_LEVEL_TRACE
	case hclog.Debug:
		return pb.LogLevel_LOG_LEVEL_DEBUG
	case hclog.Warn:
		return pb.LogLevel_LOG_LEVEL_WARN
	case hclog.Error:
		return pb.LogLevel_LOG_LEVEL_ERROR
	}
	return pb.LogLevel_LOG_LEVEL_INFO
}

// LogLevelFromProto maps a log level; unspecified means info.
func LogLevelFromProto(l pb.LogLevel) hclog.Level {
	switch l {
	case pb.LogLevel_LOG_LEVEL_TRACE:
		return hclog.Trace
	case pb.LogLevel_LOG_LEVEL_DEBUG:
		return hclog.Debug
	case pb.LogLevel_LOG_LEVEL_WARN:
		return hclog.Warn
	case pb.LogLevel_LOG_LEVEL_ERROR:
		return hclog.Error
	}
	return hclog.Info
}
