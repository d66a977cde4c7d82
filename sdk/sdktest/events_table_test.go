package sdktest_test

import (
	"reflect"
	"testing"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/sdk"
	"github.com/pith-dev/pith/sdk/sdktest"
)

// eventMethods is the one table of the hook events: the id and the method
// name every layer uses for it. TestEveryLayerHandlesEveryEvent fails when
// an event is added to hooks.AllEvents but left out of a layer.
var eventMethods = map[hooks.EventID]string{
	hooks.EventBeforeCompact: "BeforeCompact",
	hooks.EventCompacting:    "Compacting",
	hooks.EventCompact:       "Compact",
	hooks.EventBeforeTree:    "BeforeTree",
	hooks.EventTree:          "Tree",
}

func TestEveryLayerHandlesEveryEvent(t *testing.T) {
	layers := map[string]reflect.Type{
		"hooks.Plugin":                    reflect.TypeFor[hooks.Plugin](),
		"hooks.Funcs":                     reflect.TypeFor[hooks.Funcs](),
		"dispatch.Dispatcher":             reflect.TypeFor[*dispatch.Dispatcher](),
		"pluginhost.Supervisor":           reflect.TypeFor[*pluginhost.Supervisor](),
		"proto Hooks server (sdk)":        reflect.TypeFor[pb.HooksServer](),
		"proto Hooks client (pluginhost)": reflect.TypeFor[pb.HooksClient](),
		"sdktest.Harness":                 reflect.TypeFor[*sdktest.Harness](),
		"sdktest.Dispatcher":              reflect.TypeFor[*sdktest.Dispatcher](),
		"sdk.InProcessPlugin":             reflect.TypeFor[*sdk.InProcessPlugin](),
	}
	all := hooks.AllEvents()
	if len(all) != len(eventMethods) {
		t.Fatalf("hooks.AllEvents has %d events, the table %d: add the new one to eventMethods", len(all), len(eventMethods))
	}
	for _, id := range all {
		method, ok := eventMethods[id]
		if !ok {
			t.Errorf("%s is not in eventMethods", id)
			continue
		}
		for name, typ := range layers {
			if _, ok := typ.MethodByName(method); !ok {
				t.Errorf("%s has no %s method for %s", name, method, id)
			}
		}
		// The SDK detects and describes it.
		f := hooks.Funcs{}
		fv := reflect.ValueOf(&f).Elem().FieldByName("On" + method)
		if !fv.IsValid() {
			t.Errorf("hooks.Funcs has no On%s field for %s", method, id)
			continue
		}
		fv.Set(reflect.MakeFunc(fv.Type(), func([]reflect.Value) []reflect.Value { return nil }))
		if got := sdk.Events(f); len(got) != 1 || got[0] != id {
			t.Errorf("a Funcs with only On%s set is described as %v, want [%s]", method, got, id)
		}
	}
}
