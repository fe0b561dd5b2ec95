package config

import (
	"reflect"
	"slices"
)

// Changes is what differs between two configurations, as reload applies
// it: upstreams by name, and other settings by top-level key.
type Changes struct {
	// Added, Removed and Changed are upstream names: added ones are
	// started, removed ones stopped, changed ones restarted; the others
	// keep their processes and sessions.
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	Changed []string `json:"changed"`
	// Settings are top-level keys (policy, limits, ...) whose values differ
	// and that a running gateway could take up.
	Settings []string `json:"settings"`
	// Fixed are keys that cannot change while serving (http, runs_dir,
	// log): they keep their old values until restart. (The JSON names are
	// those of the config.reloaded event, as docs/reload.md gives them.)
	Fixed []string `json:"fixed"`
}

// Empty says whether nothing changed.
func (c Changes) Empty() bool {
	return len(c.Added)+len(c.Removed)+len(c.Changed)+len(c.Settings)+len(c.Fixed) == 0
}

// Diff compares the configuration a gateway runs with (old) and a newly
// loaded one (next).
func Diff(old, next *Config) Changes {
	var ch Changes
	before := map[string]int{}
	for i, u := range old.Upstreams {
		before[u.Name] = i
	}
	after := map[string]bool{}
	for _, u := range next.Upstreams {
		after[u.Name] = true
		i, ok := before[u.Name]
		switch {
		case !ok:
			ch.Added = append(ch.Added, u.Name)
		case !reflect.DeepEqual(old.Upstreams[i], u):
			ch.Changed = append(ch.Changed, u.Name)
		}
	}
	for _, u := range old.Upstreams {
		if !after[u.Name] {
			ch.Removed = append(ch.Removed, u.Name)
		}
	}
	for _, s := range []struct {
		key      string
		old, new any
		fixed    bool
	}{
		{"runs_dir", old.RunsDir, next.RunsDir, true},
		// read once, at start: run retention, the run's replica, tracing
		{"runs", old.Runs, next.Runs, true},
		{"replica_id", old.ReplicaID, next.ReplicaID, true},
		{"traces", old.Traces, next.Traces, true},
		{"log", old.Log, next.Log, true},
		{"http", old.HTTP, next.HTTP, true},
		// The pipeline's limits apply to the next calls; the HTTP server's
		// in-flight bounds and the shutdown grace are set up at start.
		{"limits", old.Limits.live(), next.Limits.live(), false},
		{"limits.max_in_flight", old.Limits.MaxInFlight, next.Limits.MaxInFlight, true},
		{"limits.max_in_flight_per_session", old.Limits.MaxInFlightPerSession, next.Limits.MaxInFlightPerSession, true},
		{"limits.shutdown_grace", old.Limits.ShutdownGrace, next.Limits.ShutdownGrace, true},
		{"sandbox", old.Sandbox, next.Sandbox, false},
		{"filesystem", old.Filesystem, next.Filesystem, false},
		{"diagnostics", old.Diagnostics, next.Diagnostics, false},
		// with the grants upstreams add
		{"policy", old.EffectivePolicy(), next.EffectivePolicy(), false},
		{"skills", old.Skills, next.Skills, false},
		{"memory", old.Memory, next.Memory, false},
		{"profiles", old.Profiles, next.Profiles, false},
		{"discovery", old.Discovery, next.Discovery, true},
		{"metrics", old.Metrics, next.Metrics, true},
		{"admin", old.Admin, next.Admin, true},
		{"definitions", old.Definitions, next.Definitions, true},
	} {
		if reflect.DeepEqual(s.old, s.new) {
			continue
		}
		if s.fixed {
			ch.Fixed = append(ch.Fixed, s.key)
		} else {
			ch.Settings = append(ch.Settings, s.key)
		}
	}
	slices.Sort(ch.Added)
	slices.Sort(ch.Removed)
	slices.Sort(ch.Changed)
	return ch
}

// live is the part of l a reload puts in force (the pipeline's limits);
// the other fields keep their values until restart.
func (l Limits) live() Limits {
	return Limits{CallTimeout: l.CallTimeout, MaxOutputBytes: l.MaxOutputBytes}
}

// TakeLive copies into l the fields of next a reload puts in force.
func (l *Limits) TakeLive(next Limits) {
	l.CallTimeout, l.MaxOutputBytes = next.CallTimeout, next.MaxOutputBytes
}
