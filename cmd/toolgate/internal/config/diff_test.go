package config

import (
	"reflect"
	"testing"
	"time"

	"github.com/toolgate/toolgate/adapters/upstream"
)

func TestDiff(t *testing.T) {
	up := func(name string, args ...string) upstream.Config {
		return upstream.Config{Name: name, Command: "/bin/server", Args: args}
	}
	base := func() *Config {
		return &Config{Upstreams: []upstream.Config{up("a"), up("b")}, Limits: Limits{CallTimeout: time.Minute}}
	}
	tests := []struct {
		name string
		edit func(*Config)
		want Changes
	}{
		{"nothing", func(*Config) {}, Changes{}},
		{"added", func(c *Config) { c.Upstreams = append(c.Upstreams, up("c")) }, Changes{Added: []string{"c"}}},
		{"removed", func(c *Config) { c.Upstreams = c.Upstreams[:1] }, Changes{Removed: []string{"b"}}},
		{"changed args", func(c *Config) { c.Upstreams[1] = up("b", "--verbose") }, Changes{Changed: []string{"b"}}},
		{"reordered is unchanged", func(c *Config) { c.Upstreams[0], c.Upstreams[1] = c.Upstreams[1], c.Upstreams[0] }, Changes{}},
		{"renamed is removed and added", func(c *Config) { c.Upstreams[0] = up("z") }, Changes{Added: []string{"z"}, Removed: []string{"a"}}},
		{"live setting", func(c *Config) { c.Limits.CallTimeout = time.Second }, Changes{Settings: []string{"limits"}}},
		{"an upstream's grant changes the policy", func(c *Config) { c.Upstreams[1].Grant = []string{"network"} },
			Changes{Changed: []string{"b"}, Settings: []string{"policy"}}},
		{"fixed setting", func(c *Config) { c.HTTP.Addr = "127.0.0.1:9" }, Changes{Fixed: []string{"http"}}},
		// The HTTP server's in-flight bounds and the shutdown grace are set
		// up at start: a reload must say they wait, not that limits applied.
		{"limits set up at start are fixed", func(c *Config) {
			c.Limits.MaxInFlight, c.Limits.MaxInFlightPerSession, c.Limits.ShutdownGrace = 7, 3, time.Second
		}, Changes{Fixed: []string{"limits.max_in_flight", "limits.max_in_flight_per_session", "limits.shutdown_grace"}}},
		{"live and fixed limits", func(c *Config) { c.Limits.CallTimeout, c.Limits.MaxInFlight = time.Second, 7 },
			Changes{Settings: []string{"limits"}, Fixed: []string{"limits.max_in_flight"}}},
		{"all at once", func(c *Config) {
			c.Upstreams = []upstream.Config{up("b", "x"), up("c")}
			c.Policy.ListDenied = "hide"
			c.RunsDir = "/elsewhere"
		}, Changes{Added: []string{"c"}, Removed: []string{"a"}, Changed: []string{"b"}, Settings: []string{"policy"}, Fixed: []string{"runs_dir"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := base()
			tt.edit(next)
			got := Diff(base(), next)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Diff = %+v, want %+v", got, tt.want)
			}
			if got.Empty() != reflect.DeepEqual(tt.want, Changes{}) {
				t.Errorf("Empty() = %v", got.Empty())
			}
		})
	}
}

// TestDiffReportsStartOnlySettings: settings read only at start (run
// retention, traces, replica_id) are reported as waiting for a restart;
// before, a reload that changed only them said "nothing changed".
func TestDiffReportsStartOnlySettings(t *testing.T) {
	for _, tt := range []struct {
		key  string
		edit func(*Config)
	}{
		{"runs", func(c *Config) { c.Runs.Keep = 5 }},
		{"traces", func(c *Config) { c.Traces.Enabled = true }},
		{"replica_id", func(c *Config) { c.ReplicaID = "b" }},
	} {
		next := &Config{}
		tt.edit(next)
		got := Diff(&Config{}, next)
		if want := (Changes{Fixed: []string{tt.key}}); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Diff = %+v, want %+v", tt.key, got, want)
		}
	}
}
