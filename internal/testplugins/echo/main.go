// Command echo is a test plugin that records every event it receives, as
// JSON, and answers each with a result whose every field is set: a test
// fills every field of an event, sends it through a real subprocess and
// checks that nothing was lost either way, so a field added to the proto
// is covered without a test of its own.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"sync"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/sdk"
)

type echo struct {
	mu     sync.Mutex
	record string
}

// note appends "<event> <json>" to the record file.
func (e *echo) note(id hooks.EventID, ev any) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	f, err := os.OpenFile(e.record, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintf(f, "%s %s\n", id, b)
	return err
}

func (e *echo) BeforeCompact(_ context.Context, ev *sdk.BeforeCompactEvent) (*sdk.BeforeCompactResult, error) {
	r := filled[sdk.BeforeCompactResult]()
	// A cancel wins over a compaction: answer the compaction, the cancel's
	// fields are covered by session_before_tree's answer.
	r.Cancel, r.CancelReason = false, ""
	return r, e.note(sdk.EventBeforeCompact, ev)
}

func (e *echo) Compacting(_ context.Context, ev *sdk.CompactingEvent) (*sdk.CompactingResult, error) {
	return filled[sdk.CompactingResult](), e.note(sdk.EventCompacting, ev)
}

func (e *echo) Compact(_ context.Context, ev *sdk.CompactEvent) error {
	return e.note(sdk.EventCompact, ev)
}

func (e *echo) BeforeTree(_ context.Context, ev *sdk.BeforeTreeEvent) (*sdk.BeforeTreeResult, error) {
	return filled[sdk.BeforeTreeResult](), e.note(sdk.EventBeforeTree, ev)
}

func (e *echo) Tree(_ context.Context, ev *sdk.TreeEvent) error {
	return e.note(sdk.EventTree, ev)
}

// filled returns a T whose every field that crosses the wire is set.
func filled[T any]() *T {
	v := new(T)
	fill(reflect.ValueOf(v).Elem(), "")
	return v
}

var (
	rawType    = reflect.TypeFor[json.RawMessage]()
	reasonType = reflect.TypeFor[hooks.Reason]()
)

// fill sets every exported field of v that has a JSON name to a value
// other than the zero one, named after the field where it can be.
func fill(v reflect.Value, name string) {
	switch {
	case v.Type() == rawType:
		v.SetBytes([]byte(fmt.Sprintf(`{"field":%q}`, name)))
	case v.Type() == reasonType:
		v.SetString(string(hooks.ReasonOverflow))
	}
	if v.Type() == rawType || v.Type() == reasonType {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(name)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int:
		v.SetInt(int64(len(name)))
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), name)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), name)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.IsExported() && f.Tag.Get("json") != "-" {
				fill(v.Field(i), f.Name)
			}
		}
	}
}

func main() {
	e := &echo{}
	flag.StringVar(&e.record, "record", "", "file the events received are appended to")
	flag.Parse()
	if err := sdk.ServePlugin(sdk.ServeOpts{BeforeCompact: e, Compacting: e, Compact: e, BeforeTree: e, Tree: e}, sdk.WithName("echo")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
