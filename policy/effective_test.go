package policy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/gateway"
)

// Hints used throughout the tests.
var (
	readOnly  = gateway.ReadOnlyHints() // read-only, closed-world
	safeWrite = gateway.Hints{ReadOnly: gateway.Bool(false), Destructive: gateway.Bool(false),
		Idempotent: gateway.Bool(true), OpenWorld: gateway.Bool(false)}
	destructiveClosed = gateway.Hints{ReadOnly: gateway.Bool(false), Destructive: gateway.Bool(true),
		OpenWorld: gateway.Bool(false)}
	// readOnlyOpen is a read-only tool that reaches outside: it needs net.
	readOnlyOpen = gateway.Hints{ReadOnly: gateway.Bool(true), OpenWorld: gateway.Bool(true)}
	// noHints is an upstream tool without annotations: destructive and
	// open-world, per MCP.
	noHints = gateway.Hints{}
)

func testTool(t testing.TB, name string, caps []string, hints gateway.Hints) *gateway.Tool {
	t.Helper()
	tool, err := gateway.NewTool(gateway.ToolDef{Name: name, Permissions: gateway.Permissions{Capabilities: caps, Hints: hints}},
		func(context.Context, *gateway.Call) (*gateway.Result, error) {
			return gateway.OkText("ran " + name), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func newPolicy(t testing.TB, edit func(*Config), opts *Options) *Effective {
	t.Helper()
	var cfg Config
	if edit != nil {
		edit(&cfg)
	}
	e, err := New(cfg, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

// toolMap resolves tools for test pipelines.
type toolMap map[string]*gateway.Tool

func (m toolMap) Resolve(name string) (*gateway.Tool, string, bool) {
	tool, ok := m[name]
	return tool, "test", ok
}

// sessionCtx returns a context as a tool handler sees it during a call in
// session: Request and Decide find the session through gateway.CallFrom.
// The empty session is a context with no call at all.
func sessionCtx(t testing.TB, session string) context.Context {
	t.Helper()
	if session == "" {
		return context.Background()
	}
	var got context.Context
	capture := gateway.Must(gateway.NewTool(gateway.ToolDef{Name: "capture"},
		func(ctx context.Context, _ *gateway.Call) (*gateway.Result, error) {
			got = context.WithoutCancel(ctx)
			return gateway.OkText("captured"), nil
		}))
	p := gateway.NewPipeline(&gateway.Options{Tools: toolMap{"capture": capture}})
	if res := p.Call(context.Background(), &gateway.Call{Name: "capture", Session: session}); res.IsError {
		t.Fatalf("capture call failed: %s", res.Message)
	}
	if c := gateway.CallFrom(got); c == nil || c.Session != session {
		t.Fatalf("captured context has call %+v", c)
	}
	return got
}

// want is an expected decision; reason lists substrings of the reason.
type want struct {
	allow       bool
	layer, rule string
	missing     []string
	reason      []string
}

func checkDecision(t *testing.T, d gateway.Decision, w want) {
	t.Helper()
	if d.Allow != w.allow || d.Layer != w.layer || d.Rule != w.rule || !slices.Equal(d.Missing, w.missing) {
		t.Errorf("decision = allow %v, layer %q, rule %q, missing %v\nwant       allow %v, layer %q, rule %q, missing %v\nreason: %s",
			d.Allow, d.Layer, d.Rule, d.Missing, w.allow, w.layer, w.rule, w.missing, d.Reason)
	}
	if d.Reason == "" {
		t.Error("decision has no reason")
	}
	for _, s := range w.reason {
		if !strings.Contains(d.Reason, s) {
			t.Errorf("reason %q does not contain %q", d.Reason, s)
		}
	}
}

// allowEverything is the most permissive valid configuration: every
// enabling mechanism, switched on for every tool.
func allowEverything(c *Config) {
	c.CustomCapabilities = []string{"gpu"}
	c.Capabilities.Allow = []string{Net, "gpu"}
	c.Capabilities.Requestable = []string{Net, "gpu"}
	c.Tools.Allow = []string{"*"}
	c.Grants = []Grant{{Tools: []string{"*"}, Capabilities: []string{Net, "gpu", FSRead}}}
	c.Destructive.AllowAllDangerously = true
}

func TestNewValidation(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string // prefix of the error; "" means valid
		alsoIn  string // a further substring of the error
	}{
		{"zero config is valid", func(*Config) {}, "", ""},
		{"full config is valid", allowEverything, "", ""},
		{"unknown capability in allow names key and value",
			func(c *Config) { c.Capabilities.Allow = []string{Net, "nett"} },
			`policy.capabilities.allow[1]: unknown capability "nett"`, "custom_capabilities"},
		{"unknown capability in deny", func(c *Config) { c.Capabilities.Deny = []string{"bogus"} },
			`policy.capabilities.deny[0]: unknown capability "bogus"`, ""},
		{"unknown capability in requestable", func(c *Config) { c.Capabilities.Requestable = []string{"fs.delete"} },
			`policy.capabilities.requestable[0]: unknown capability "fs.delete"`, ""},
		{"unknown capability in a grant", func(c *Config) {
			c.Grants = []Grant{{Tools: []string{"a"}, Capabilities: []string{Net}}, {Tools: []string{"b"}, Capabilities: []string{FSRead, "gpu"}}}
		}, `policy.grants[1].capabilities[1]: unknown capability "gpu"`, ""},
		{"custom capability makes the name known", func(c *Config) {
			c.CustomCapabilities = []string{"gpu", "db.admin"}
			c.Capabilities.Allow = []string{"gpu"}
			c.Capabilities.Requestable = []string{"db.admin"}
		}, "", ""},
		{"bad custom capability name", func(c *Config) { c.CustomCapabilities = []string{"GPU!"} },
			`policy.custom_capabilities[0]: bad capability name "GPU!"`, ""},
		{"shell.exec cannot be a custom capability", func(c *Config) { c.CustomCapabilities = []string{ShellExec} },
			`policy.custom_capabilities[0]:`, "runtime denies"},
		// Merge rule 1 at load time: config cannot even ask for shell.exec.
		{"shell.exec in allow", func(c *Config) { c.Capabilities.Allow = []string{ShellExec} },
			`policy.capabilities.allow[0]: shell.exec is denied by the runtime`, ""},
		{"shell.exec in requestable", func(c *Config) { c.Capabilities.Requestable = []string{Net, ShellExec} },
			`policy.capabilities.requestable[1]: shell.exec is denied by the runtime`, ""},
		{"shell.exec in a grant", func(c *Config) { c.Grants = []Grant{{Tools: []string{"sh"}, Capabilities: []string{ShellExec}}} },
			`policy.grants[0].capabilities[0]: shell.exec is denied by the runtime`, ""},
		{"shell.exec in deny is fine", func(c *Config) { c.Capabilities.Deny = []string{ShellExec} }, "", ""},
		{"bad glob in tools.allow", func(c *Config) { c.Tools.Allow = []string{"fs_*", "["} },
			`policy.tools.allow[1]: bad tool-name glob "["`, ""},
		{"glob that can never match in tools.deny", func(c *Config) { c.Tools.Deny = []string{"fs.*"} },
			`policy.tools.deny[0]: tool-name glob "fs.*" can never match`, ""},
		{"bad glob in a grant", func(c *Config) { c.Grants = []Grant{{Tools: []string{`a\`}, Capabilities: []string{Net}}} },
			`policy.grants[0].tools[0]: bad tool-name glob`, ""},
		{"grant without tools", func(c *Config) { c.Grants = []Grant{{Capabilities: []string{Net}}} },
			`policy.grants[0]: a grant needs tools`, ""},
		{"grant without capabilities", func(c *Config) { c.Grants = []Grant{{Tools: []string{"x"}}} },
			`policy.grants[0]: a grant needs capabilities`, ""},
		{"bad glob in destructive.allow", func(c *Config) { c.Destructive.Allow = []string{"a[b"} },
			`policy.destructive.allow[0]: bad tool-name glob`, ""},
		// Merge rule 5 at load time: no wildcard over everything.
		{"star in destructive.allow", func(c *Config) { c.Destructive.Allow = []string{"delete_*", "*"} },
			`policy.destructive.allow[1]: "*" matches every tool`, "allow_all_tools_dangerously"},
		{"double star in destructive.allow", func(c *Config) { c.Destructive.Allow = []string{"**"} },
			`policy.destructive.allow[0]: "**" matches every tool`, "allow_all_tools_dangerously"},
		{"question star in destructive.allow", func(c *Config) { c.Destructive.Allow = []string{"?*"} },
			`policy.destructive.allow[0]: "?*" matches every tool`, "allow_all_tools_dangerously"},
		{"every upstream tool in destructive.allow", func(c *Config) { c.Destructive.Allow = []string{"*__*"} },
			`policy.destructive.allow[0]: "*__*" matches every upstream tool`, "allow_all_tools_dangerously"},
		{"a letter class in destructive.allow", func(c *Config) { c.Destructive.Allow = []string{"[a-zA-Z]*"} },
			`policy.destructive.allow[0]: "[a-zA-Z]*" matches every tool`, "allow_all_tools_dangerously"},
		{"lowercase class in destructive.allow", func(c *Config) { c.Destructive.Allow = []string{"[a-z]*"} },
			`policy.destructive.allow[0]: "[a-z]*" matches every tool (it matches names of every shape)`, "allow_all_tools_dangerously"},
		{"one upstream's deletes are fine", func(c *Config) { c.Destructive.Allow = []string{"fs__delete_*", "*_file"} }, "", ""},
		{"list_denied show", func(c *Config) { c.ListDenied = "show" }, "", ""},
		{"list_denied hide", func(c *Config) { c.ListDenied = "hide" }, "", ""},
		{"bad list_denied", func(c *Config) { c.ListDenied = "hidden" },
			`policy.list_denied: "hidden" is neither "show" nor "hide"`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cfg Config
			tc.edit(&cfg)
			e, err := New(cfg, nil)
			if tc.wantErr == "" {
				if err != nil || e == nil {
					t.Fatalf("New = %v, %v; want a policy", e, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("New succeeded; want error %q", tc.wantErr)
			}
			if !strings.HasPrefix(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), tc.alsoIn) {
				t.Fatalf("error = %q\nwant prefix %q containing %q", err, tc.wantErr, tc.alsoIn)
			}
		})
	}
}

// TestNewCopiesConfig checks that changing the Config after New does not
// change the policy.
func TestNewCopiesConfig(t *testing.T) {
	var cfg Config
	cfg.Capabilities.Allow = []string{Net}
	e, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Capabilities.Allow[0] = FSRead
	d := e.Decide(context.Background(), testTool(t, "fetch", nil, readOnlyOpen))
	checkDecision(t, d, want{allow: true, layer: LayerConfig, rule: "policy.capabilities.allow:net"})
}

// TestMergeRule1RuntimeDenyWins: runtime deny rules always win. shell.exec
// is denied under the most permissive configuration there is, with a skill
// asking for it too; and the destructive deny holds against every
// capability-enabling mechanism.
func TestMergeRule1RuntimeDenyWins(t *testing.T) {
	shellDeny := want{layer: LayerRuntime, rule: RuleShellExec, missing: []string{ShellExec},
		reason: []string{"denied by the runtime", "no configuration, grant or skill"}}
	destructiveDeny := want{layer: LayerRuntime, rule: RuleDestructive}
	enableAllButDestructive := func(c *Config) {
		allowEverything(c)
		c.Destructive.AllowAllDangerously = false
	}
	tests := []struct {
		name string
		edit func(*Config)
		tool *gateway.Tool
		want want
	}{
		{"shell under zero config", nil, testTool(t, "run", []string{ShellExec}, readOnly), shellDeny},
		{"shell over allow, grants, tools.allow, destructive and skill", allowEverything,
			testTool(t, "run", []string{ShellExec}, readOnly), shellDeny},
		{"shell with other capabilities", allowEverything,
			testTool(t, "run", []string{FSRead, Net, ShellExec}, readOnly), shellDeny},
		{"shell wins over tools.deny", func(c *Config) { allowEverything(c); c.Tools.Deny = []string{"run"} },
			testTool(t, "run", []string{ShellExec}, noHints), shellDeny},
		{"shell on an unannotated tool", allowEverything, testTool(t, "run", []string{ShellExec}, noHints), shellDeny},
		{"destructive over capabilities.allow, grants, tools.allow and skill", enableAllButDestructive,
			testTool(t, "drop_table", []string{Net}, destructiveClosed), destructiveDeny},
		{"destructive needing only safe defaults", enableAllButDestructive,
			testTool(t, "delete_file", []string{FSWrite}, destructiveClosed), destructiveDeny},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newPolicy(t, tc.edit, nil)
			ctx := sessionCtx(t, "s1")
			res := e.Request(ctx, "greedy", []string{ShellExec, Net, "gpu"})
			if res[0].Granted || !strings.HasPrefix(res[0].Reason, "denied by runtime") {
				t.Fatalf("skill request for shell.exec = %+v, want refused by runtime", res[0])
			}
			checkDecision(t, e.Decide(ctx, tc.tool), tc.want)
		})
	}
}

type pathParams struct {
	Path string `json:"path"`
}

// TestMergeRule2SandboxAlwaysWins: sandbox path constraints always win. The
// policy allows everything, yet a filesystem tool refuses a path outside the
// sandbox roots: the constraint is applied by the tool, through the
// sandbox path guards (policy.Sandbox), after the policy allowed the call.
// The policy never widens it; it only reports the roots (in the reason and
// in Explain's sandbox layer).
func TestMergeRule2SandboxAlwaysWins(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "in.txt"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "x"), []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := NewSandbox([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()

	readFile := gateway.Must(gateway.NewTypedTool(gateway.ToolDef{
		Name:        "read_file",
		Permissions: gateway.Permissions{Capabilities: []string{FSRead}, Hints: readOnly},
	}, func(_ context.Context, in pathParams) (*gateway.Result, error) {
		f, err := sb.Open(in.Path)
		if errors.Is(err, ErrOutsideSandbox) {
			return gateway.Error("refused by the sandbox: "+err.Error(), "path refused"), nil
		}
		if err != nil {
			return nil, err
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			return nil, err
		}
		return gateway.OkText(string(b)), nil
	}))
	e := newPolicy(t, allowEverything, &Options{SandboxRoots: sb.Roots()})
	p := gateway.NewPipeline(&gateway.Options{Tools: toolMap{"read_file": readFile}, Policy: e})

	tests := []struct {
		name    string
		path    string
		wantOut string // "" means refused by the sandbox
	}{
		{"inside", "in.txt", "inside"},
		{"dot-dot outside", "../x", ""},
		{"absolute outside", filepath.Join(base, "x"), ""},
		{"through the root and out", root + "/../x", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			call := &gateway.Call{Name: "read_file", Arguments: []byte(fmt.Sprintf(`{"path":%q}`, tc.path))}
			res := p.Call(context.Background(), call)
			// The policy allowed the call, whatever the path.
			if call.Decision == nil || !call.Decision.Allow {
				t.Fatalf("policy decision = %+v, want allow", call.Decision)
			}
			wantRoots := fmt.Sprintf("confined to sandbox roots [%s]", root)
			if !strings.Contains(call.Decision.Reason, wantRoots) {
				t.Errorf("reason %q does not contain %q", call.Decision.Reason, wantRoots)
			}
			if tc.wantOut != "" {
				if res.IsError || res.OutputText() != tc.wantOut {
					t.Fatalf("result = %+v, want %q", res, tc.wantOut)
				}
				return
			}
			if !res.IsError || res.Kind != gateway.KindToolError {
				t.Fatalf("result = %+v; want a tool error from the sandbox", res)
			}
			if !strings.HasPrefix(res.Message, "refused by the sandbox: ") {
				t.Errorf("message %q does not say the path is outside the sandbox", res.Message)
			}
			if strings.Contains(res.OutputText()+res.Message, "SECRET") {
				t.Fatal("read data from outside the sandbox")
			}
		})
	}
	rep := e.Explain(context.Background(), []ExplainTool{{Name: "read_file", Toolset: "filesystem", Tool: readFile}})
	if !slices.Equal(rep.Layers.Sandbox.Roots, []string{root}) {
		t.Errorf("sandbox layer roots = %v, want [%s]", rep.Layers.Sandbox.Roots, root)
	}
}

// TestMergeRule3ConfigEnablesSafeCapabilities: configuration can enable
// capabilities beyond the runtime safe defaults, through
// capabilities.allow, grants and tools.allow; its denies win over its
// allows.
func TestMergeRule3ConfigEnablesSafeCapabilities(t *testing.T) {
	fetch := testTool(t, "fetch", nil, readOnlyOpen) // needs net: open-world
	upFetch := testTool(t, "web__fetch", nil, readOnlyOpen)
	search := testTool(t, "web_search", []string{Net}, readOnly)
	readAndFetch := testTool(t, "read_and_fetch", []string{FSRead, Net}, readOnly)
	readFile := testTool(t, "read_file", []string{FSRead}, readOnly)
	writeFile := testTool(t, "write_file", []string{FSWrite}, safeWrite)
	gpuJob := testTool(t, "gpu_job", []string{"gpu"}, safeWrite)
	notEnabled := want{layer: LayerConfig, rule: RuleNotEnabled, missing: []string{Net},
		reason: []string{"needs net, which is not enabled", "policy.capabilities.allow", "policy.grants", "policy.tools.allow", "not requestable"}}

	tests := []struct {
		name string
		edit func(*Config)
		tool *gateway.Tool
		want want
	}{
		{"safe defaults: fs.read", nil, readFile, want{allow: true, layer: LayerRuntime, rule: RuleSafeDefaults,
			reason: []string{"fs.read by runtime.safe_defaults", "confined to the sandbox roots"}}},
		{"safe defaults: fs.write", nil, writeFile, want{allow: true, layer: LayerRuntime, rule: RuleSafeDefaults}},
		{"net is not a safe default", nil, fetch, notEnabled},
		{"declared net is not a safe default", nil, search, notEnabled},
		{"denial says net is requestable", func(c *Config) { c.Capabilities.Requestable = []string{Net} }, fetch,
			want{layer: LayerConfig, rule: RuleNotEnabled, missing: []string{Net},
				reason: []string{"net is requestable, so a loaded skill may request it"}}},
		{"net via capabilities.allow", func(c *Config) { c.Capabilities.Allow = []string{Net} }, fetch,
			want{allow: true, layer: LayerConfig, rule: "policy.capabilities.allow:net", reason: []string{"net by policy.capabilities.allow:net"}}},
		{"net via the grant that matches", func(c *Config) {
			c.Grants = []Grant{{Tools: []string{"other_*"}, Capabilities: []string{Net}}, {Tools: []string{"x", "fet*"}, Capabilities: []string{Net}}}
		}, fetch, want{allow: true, layer: LayerConfig, rule: "policy.grants[1]"}},
		{"an upstream's grant is named by its own key", func(c *Config) {
			c.Grants = []Grant{{Tools: []string{"fet*"}, Capabilities: []string{Net}, Key: "upstreams[3].grant"}}
		}, fetch, want{allow: true, layer: LayerConfig, rule: "upstreams[3].grant"}},
		{"an upstream tool's denial names the upstream's grant key", nil, upFetch,
			want{layer: LayerConfig, rule: RuleNotEnabled, missing: []string{Net},
				reason: []string{`the upstream's grant: key (upstreams[].grant of the upstream with prefix "web")`}}},
		{"grant of another capability does not enable net", func(c *Config) {
			c.CustomCapabilities = []string{"gpu"}
			c.Grants = []Grant{{Tools: []string{"fetch"}, Capabilities: []string{"gpu"}}}
		}, fetch, notEnabled},
		{"net via tools.allow", func(c *Config) { c.Tools.Allow = []string{"web_*"} }, search,
			want{allow: true, layer: LayerConfig, rule: "policy.tools.allow:web_*"}},
		{"tools.allow for other tools", func(c *Config) { c.Tools.Allow = []string{"web_*"} }, fetch, notEnabled},
		{"rule names the last layer needed", func(c *Config) {
			c.Grants = []Grant{{Tools: []string{"read_and_fetch"}, Capabilities: []string{Net}}}
		}, readAndFetch, want{allow: true, layer: LayerConfig, rule: "policy.grants[0]",
			reason: []string{"fs.read by runtime.safe_defaults, net by policy.grants[0]", "confined to the sandbox roots"}}},
		{"custom capability via allow", func(c *Config) {
			c.CustomCapabilities = []string{"gpu"}
			c.Capabilities.Allow = []string{"gpu"}
		}, gpuJob, want{allow: true, layer: LayerConfig, rule: "policy.capabilities.allow:gpu"}},
		{"undeclared capability of a tool", nil, gpuJob, want{layer: LayerConfig, rule: RuleNotEnabled, missing: []string{"gpu"},
			reason: []string{"gpu is not a known capability"}}},
		{"capabilities.deny wins over capabilities.allow", func(c *Config) {
			c.Capabilities.Allow = []string{Net}
			c.Capabilities.Deny = []string{Net}
		}, fetch, want{layer: LayerConfig, rule: "policy.capabilities.deny:net", missing: []string{Net}}},
		{"capabilities.deny wins over tools.allow and grants", func(c *Config) {
			c.Tools.Allow = []string{"*"}
			c.Grants = []Grant{{Tools: []string{"fetch"}, Capabilities: []string{Net}}}
			c.Capabilities.Deny = []string{Net}
		}, fetch, want{layer: LayerConfig, rule: "policy.capabilities.deny:net", missing: []string{Net}}},
		{"capabilities.deny can remove a safe default", func(c *Config) { c.Capabilities.Deny = []string{FSWrite} }, writeFile,
			want{layer: LayerConfig, rule: "policy.capabilities.deny:fs.write", missing: []string{FSWrite}}},
		{"tools.deny wins over tools.allow", func(c *Config) {
			c.Tools.Allow = []string{"*"}
			c.Tools.Deny = []string{"fe*"}
		}, fetch, want{layer: LayerConfig, rule: "policy.tools.deny:fe*", reason: []string{`policy.tools.deny glob "fe*"`}}},
		{"tools.deny of a safe tool", func(c *Config) { c.Tools.Deny = []string{"read_file"} }, readFile,
			want{layer: LayerConfig, rule: "policy.tools.deny:read_file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newPolicy(t, tc.edit, nil)
			checkDecision(t, e.Decide(context.Background(), tc.tool), tc.want)
		})
	}
}

// TestMergeRule4SkillRequestResults: a skill can only request; each
// request says whether it was granted and why not.
func TestMergeRule4SkillRequestResults(t *testing.T) {
	e := newPolicy(t, func(c *Config) {
		c.CustomCapabilities = []string{"gpu", "tpu", "db.admin"}
		c.Capabilities.Requestable = []string{Net, "gpu"}
		c.Capabilities.Deny = []string{"gpu"}
		c.Capabilities.Allow = []string{"tpu"}
	}, nil)
	got := e.Request(sessionCtx(t, "A"), "research",
		[]string{Net, "db.admin", ShellExec, "gpu", "nett", FSRead, "tpu", Net})
	tests := []struct {
		capability string
		granted    bool
		reason     string // prefix
	}{
		{Net, true, "granted for this session"},
		{"db.admin", false, "not requestable"},
		{ShellExec, false, "denied by runtime"},
		{"gpu", false, "denied by config"},
		{"nett", false, "unknown capability"},
		{FSRead, true, "already enabled for every tool by runtime.safe_defaults"},
		{"tpu", true, "already enabled for every tool by policy.capabilities.allow:tpu"},
	}
	if len(got) != len(tests) {
		t.Fatalf("Request returned %d results, want %d (one per distinct capability): %+v", len(got), len(tests), got)
	}
	for i, tc := range tests {
		t.Run(tc.capability, func(t *testing.T) {
			r := got[i]
			if r.Capability != tc.capability || r.Granted != tc.granted || !strings.HasPrefix(r.Reason, tc.reason) {
				t.Fatalf("result = %+v, want %s granted=%v reason %q…", r, tc.capability, tc.granted, tc.reason)
			}
		})
	}
	wantGrants := []SkillGrant{{Session: "A", Skill: "research", Capability: Net}}
	if g := e.SkillGrants(); !slices.Equal(g, wantGrants) {
		t.Fatalf("SkillGrants = %+v, want %+v", g, wantGrants)
	}
}

// TestMergeRule4SkillRequestsOnly: a skill's request takes effect only for
// capabilities config marks requestable, never on its own, and only in the
// session that loaded the skill.
func TestMergeRule4SkillRequestsOnly(t *testing.T) {
	fetch := testTool(t, "fetch", nil, readOnlyOpen)
	requestable := func(c *Config) { c.Capabilities.Requestable = []string{Net} }
	type request struct {
		session, skill string
		caps           []string
	}
	notEnabled := want{layer: LayerConfig, rule: RuleNotEnabled, missing: []string{Net}}
	tests := []struct {
		name     string
		edit     func(*Config)
		requests []request
		tool     *gateway.Tool
		session  string // of the call deciding
		forget   string // a session forgotten before deciding
		want     want
	}{
		{"requestable without a request is still denied", requestable, nil, fetch, "A", "", notEnabled},
		{"requested and requestable: allowed in that session", requestable,
			[]request{{"A", "web-research", []string{Net}}}, fetch, "A", "",
			want{allow: true, layer: LayerSkill, rule: "skill:web-research", reason: []string{"net by skill:web-research"}}},
		{"grants are per session: session B is not allowed", requestable,
			[]request{{"A", "web-research", []string{Net}}}, fetch, "B", "", notEnabled},
		{"a context without a call is its own session", requestable,
			[]request{{"A", "web-research", []string{Net}}}, fetch, "", "", notEnabled},
		{"a request outside a call applies outside calls", requestable,
			[]request{{"", "web-research", []string{Net}}}, fetch, "", "",
			want{allow: true, layer: LayerSkill, rule: "skill:web-research"}},
		{"the first skill that requested is named", requestable,
			[]request{{"A", "first", []string{Net}}, {"A", "second", []string{Net}}}, fetch, "A", "",
			want{allow: true, layer: LayerSkill, rule: "skill:first"}},
		{"not requestable: the request alone grants nothing", nil,
			[]request{{"A", "web-research", []string{Net}}}, fetch, "A", "", notEnabled},
		{"config deny wins over a requestable request", func(c *Config) { requestable(c); c.Capabilities.Deny = []string{Net} },
			[]request{{"A", "web-research", []string{Net}}}, fetch, "A", "",
			want{layer: LayerConfig, rule: "policy.capabilities.deny:net", missing: []string{Net}}},
		{"tools.deny wins over a skill grant", func(c *Config) { requestable(c); c.Tools.Deny = []string{"fetch"} },
			[]request{{"A", "web-research", []string{Net}}}, fetch, "A", "",
			want{layer: LayerConfig, rule: "policy.tools.deny:fetch"}},
		{"a skill grant does not enable a destructive tool", requestable,
			[]request{{"A", "web-research", []string{Net}}}, testTool(t, "post", nil, noHints), "A", "",
			want{layer: LayerRuntime, rule: RuleDestructive}},
		{"grants end with the session", requestable,
			[]request{{"A", "web-research", []string{Net}}}, fetch, "A", "A", notEnabled},
		{"forgetting another session keeps the grant", requestable,
			[]request{{"A", "web-research", []string{Net}}}, fetch, "A", "B",
			want{allow: true, layer: LayerSkill, rule: "skill:web-research"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newPolicy(t, tc.edit, nil)
			for _, r := range tc.requests {
				e.Request(sessionCtx(t, r.session), r.skill, r.caps)
			}
			if tc.forget != "" {
				e.ForgetSession(tc.forget)
			}
			checkDecision(t, e.Decide(sessionCtx(t, tc.session), tc.tool), tc.want)
		})
	}
}

// TestMergeRule5DestructiveNeedsExplicitEnablement: destructive operations
// need explicit enablement by tool-name glob, or the loudly named
// allow_all_tools_dangerously; "*" is refused in destructive.allow (see
// TestNewValidation) and no other allow enables them.
func TestMergeRule5DestructiveNeedsExplicitEnablement(t *testing.T) {
	deleteFile := testTool(t, "delete_file", []string{FSWrite}, destructiveClosed)
	dropTable := testTool(t, "drop_table", nil, destructiveClosed)
	upstream := testTool(t, "gh__delete_repo", nil, noHints) // destructive and open-world
	denied := want{layer: LayerRuntime, rule: RuleDestructive,
		reason: []string{"its destructive hint says so", "policy.destructive.allow"}}
	tests := []struct {
		name string
		edit func(*Config)
		tool *gateway.Tool
		want want
	}{
		{"denied by default", nil, deleteFile, denied},
		{"unannotated upstream denied by default", nil, upstream, want{layer: LayerRuntime, rule: RuleDestructive,
			reason: []string{"it has no hints, and MCP treats such a tool as destructive"}}},
		{"enabled by its glob", func(c *Config) { c.Destructive.Allow = []string{"delete_*"} }, deleteFile,
			want{allow: true, layer: LayerConfig, rule: "policy.destructive.allow:delete_*",
				reason: []string{"fs.write by runtime.safe_defaults", "destructive operations are enabled by policy.destructive.allow:delete_*"}}},
		{"another tool's glob does not enable it", func(c *Config) { c.Destructive.Allow = []string{"delete_file"} }, dropTable, denied},
		{"allow_all_tools_dangerously enables every destructive tool", func(c *Config) { c.Destructive.AllowAllDangerously = true },
			dropTable, want{allow: true, layer: LayerConfig, rule: RuleAllowAllDestructive}},
		{"a specific glob is named over allow_all_tools_dangerously", func(c *Config) {
			c.Destructive.AllowAllDangerously = true
			c.Destructive.Allow = []string{"drop_*"}
		}, dropTable, want{allow: true, layer: LayerConfig, rule: "policy.destructive.allow:drop_*"}},
		{"tools.allow does not enable destructive tools", func(c *Config) { c.Tools.Allow = []string{"*"} }, dropTable, denied},
		{"grants do not enable destructive tools", func(c *Config) {
			c.Grants = []Grant{{Tools: []string{"*"}, Capabilities: []string{Net}}}
		}, dropTable, denied},
		{"enabled destructive upstream still needs net", func(c *Config) { c.Destructive.Allow = []string{"gh__*"} }, upstream,
			want{layer: LayerConfig, rule: RuleNotEnabled, missing: []string{Net}}},
		{"enabled destructive upstream with net", func(c *Config) {
			c.Destructive.Allow = []string{"gh__*"}
			c.Capabilities.Allow = []string{Net}
		}, upstream, want{allow: true, layer: LayerConfig, rule: "policy.destructive.allow:gh__*",
			reason: []string{"net by policy.capabilities.allow:net"}}},
		{"read-only overrides a destructive hint", nil,
			testTool(t, "peek", nil, gateway.Hints{ReadOnly: gateway.Bool(true), Destructive: gateway.Bool(true), OpenWorld: gateway.Bool(false)}),
			want{allow: true, layer: LayerRuntime, rule: RuleNoCapabilities}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newPolicy(t, tc.edit, nil)
			checkDecision(t, e.Decide(context.Background(), tc.tool), tc.want)
		})
	}
}

// TestDecideHintCombinations: hints as MCP defines them; absent hints mean
// destructive and open-world, so an unannotated tool is denied.
func TestDecideHintCombinations(t *testing.T) {
	b := gateway.Bool
	destructiveOn := func(c *Config) { c.Destructive.AllowAllDangerously = true }
	needsNet := want{layer: LayerConfig, rule: RuleNotEnabled, missing: []string{Net}}
	tests := []struct {
		name  string
		edit  func(*Config)
		hints gateway.Hints
		want  want
	}{
		{"absent hints: destructive, denied", nil, gateway.Hints{}, want{layer: LayerRuntime, rule: RuleDestructive}},
		{"absent hints, destructive enabled: open-world needs net", destructiveOn, gateway.Hints{}, needsNet},
		{"read-only only: open-world needs net", nil, gateway.Hints{ReadOnly: b(true)}, needsNet},
		{"read-only, closed-world", nil, readOnly, want{allow: true, layer: LayerRuntime, rule: RuleNoCapabilities,
			reason: []string{"needs no capability", "not destructive"}}},
		{"not destructive, closed-world", nil, gateway.Hints{Destructive: b(false), OpenWorld: b(false)},
			want{allow: true, layer: LayerRuntime, rule: RuleNoCapabilities}},
		{"not destructive, world unspecified: needs net", nil, gateway.Hints{Destructive: b(false)}, needsNet},
		{"not read-only, destructive unspecified: destructive", nil, gateway.Hints{ReadOnly: b(false), OpenWorld: b(false)},
			want{layer: LayerRuntime, rule: RuleDestructive}},
		{"destructive, closed-world", nil, destructiveClosed, want{layer: LayerRuntime, rule: RuleDestructive}},
		{"destructive enabled, closed-world", destructiveOn, destructiveClosed,
			want{allow: true, layer: LayerConfig, rule: RuleAllowAllDestructive}},
		{"read-only and destructive: read-only wins", nil, gateway.Hints{ReadOnly: b(true), Destructive: b(true), OpenWorld: b(false)},
			want{allow: true, layer: LayerRuntime, rule: RuleNoCapabilities}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newPolicy(t, tc.edit, nil)
			checkDecision(t, e.Decide(context.Background(), testTool(t, "tool", nil, tc.hints)), tc.want)
		})
	}
	t.Run("nil tool", func(t *testing.T) {
		if d := Default().Decide(context.Background(), nil); d.Allow {
			t.Fatalf("nil tool allowed: %+v", d)
		}
	})
}

// TestAcceptance7DangerousToolsDisabledByDefault: seed 002 acceptance
// criterion 7 (dangerous tools disabled by default) and its governance
// list: shell and destructive operations are denied by default, and so is
// reaching the network; the built-in safe tools work.
func TestAcceptance7DangerousToolsDisabledByDefault(t *testing.T) {
	tests := []struct {
		name  string
		caps  []string
		hints gateway.Hints
		want  want
	}{
		{"shell", []string{ShellExec}, readOnly, want{layer: LayerRuntime, rule: RuleShellExec, missing: []string{ShellExec}}},
		{"destructive", []string{FSWrite}, destructiveClosed, want{layer: LayerRuntime, rule: RuleDestructive}},
		{"unannotated upstream", nil, noHints, want{layer: LayerRuntime, rule: RuleDestructive}},
		{"network", nil, readOnlyOpen, want{layer: LayerConfig, rule: RuleNotEnabled, missing: []string{Net}}},
		{"read_file", []string{FSRead}, readOnly, want{allow: true, layer: LayerRuntime, rule: RuleSafeDefaults}},
		{"write_file", []string{FSWrite}, safeWrite, want{allow: true, layer: LayerRuntime, rule: RuleSafeDefaults}},
		{"recall_memory", []string{MemoryRead}, readOnly, want{allow: true, layer: LayerRuntime, rule: RuleSafeDefaults}},
		{"write_memory", []string{MemoryWrite}, safeWrite, want{allow: true, layer: LayerRuntime, rule: RuleSafeDefaults}},
		{"load_skill", []string{SkillsRead}, readOnly, want{allow: true, layer: LayerRuntime, rule: RuleSafeDefaults}},
	}
	e := Default()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkDecision(t, e.Decide(context.Background(), testTool(t, "tool", tc.caps, tc.hints)), tc.want)
		})
	}
	if e.HideDenied() {
		t.Error("the default hides denied tools; it should list them and deny at call time")
	}
}

// TestAcceptance6PermissionRejectionsExplicit: seed 002 acceptance
// criterion 6. A denied call through the pipeline fails with a
// permission-denied result that names the tool, the layer, the rule and
// the missing capability, and the decision is kept on the call for the
// record.
func TestAcceptance6PermissionRejectionsExplicit(t *testing.T) {
	tools := toolMap{
		"fetch":  testTool(t, "fetch", nil, readOnlyOpen),
		"run":    testTool(t, "run", []string{ShellExec}, readOnly),
		"delete": testTool(t, "delete", nil, destructiveClosed),
		"read":   testTool(t, "read", []string{FSRead}, readOnly),
	}
	p := gateway.NewPipeline(&gateway.Options{Tools: tools, Policy: Default()})
	tests := []struct {
		tool     string
		wantMsg  []string
		wantRule string
	}{
		{"fetch", []string{"Permission denied: tool `fetch` needs net", `config rule "capability.not_enabled"`, "policy.capabilities.allow"}, RuleNotEnabled},
		{"run", []string{"tool `run` needs shell.exec", `runtime rule "runtime.deny:shell.exec"`}, RuleShellExec},
		{"delete", []string{"tool `delete`", `runtime rule "runtime.deny:destructive"`, "policy.destructive.allow"}, RuleDestructive},
		{"read", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			call := &gateway.Call{Name: tc.tool}
			res := p.Call(context.Background(), call)
			if call.Decision == nil || call.Decision.Rule == "" {
				t.Fatalf("no decision recorded on the call: %+v", call.Decision)
			}
			if tc.wantRule == "" {
				if res.IsError {
					t.Fatalf("allowed tool failed: %s", res.Message)
				}
				return
			}
			if res.Kind != gateway.KindDenied || call.Decision.Rule != tc.wantRule {
				t.Fatalf("result kind %q, rule %q; want %q, %q", res.Kind, call.Decision.Rule, gateway.KindDenied, tc.wantRule)
			}
			for _, s := range tc.wantMsg {
				if !strings.Contains(res.Message, s) {
					t.Errorf("message %q does not contain %q", res.Message, s)
				}
			}
		})
	}
}

// TestDecideConcurrentWithRequest runs Decide (and Explain) while skills
// request capabilities and sessions end; run with -race. A session that
// never requested anything is never allowed.
func TestDecideConcurrentWithRequest(t *testing.T) {
	e := newPolicy(t, func(c *Config) { c.Capabilities.Requestable = []string{Net} }, nil)
	fetch := testTool(t, "fetch", nil, readOnlyOpen)
	sessions := []string{"s0", "s1", "s2", "s3"}
	ctxs := map[string]context.Context{}
	for _, s := range append(sessions, "never") {
		ctxs[s] = sessionCtx(t, s)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 300 {
				if d := e.Decide(ctxs["never"], fetch); d.Allow {
					t.Errorf("session without a request allowed: %+v", d)
					return
				}
				e.Decide(ctxs[sessions[(w+i)%len(sessions)]], fetch)
				if i%50 == 0 {
					e.Explain(ctxs["s0"], []ExplainTool{{Name: "fetch", Tool: fetch}})
				}
			}
		})
	}
	for w := range 2 {
		wg.Go(func() {
			for i := range 300 {
				s := sessions[(w+i)%len(sessions)]
				if res := e.Request(ctxs[s], fmt.Sprintf("skill%d", i%3), []string{Net}); !res[0].Granted {
					t.Errorf("requestable net refused: %+v", res)
					return
				}
				if i%7 == 0 {
					e.ForgetSession(s)
				}
			}
		})
	}
	wg.Wait()
	e.Request(ctxs["s1"], "late", []string{Net})
	if d := e.Decide(ctxs["s1"], fetch); !d.Allow {
		t.Fatalf("after a request, fetch in s1 = %+v", d)
	}
}

// A skill request decided on the version in force just before a reload
// must not land in the shared grant store after Replace filtered it: the
// version in force decides it, so the new policy's rules hold.
func TestRequestAfterReplaceFollowsNewPolicy(t *testing.T) {
	requestable := func(c *Config) { c.Capabilities.Requestable = []string{Net} }
	tests := []struct {
		name        string
		next        func(*Config)
		wantGranted bool
		wantReason  string
	}{
		{"still requestable", requestable, true, "granted"},
		{"no longer requestable", nil, false, "not requestable"},
		{"denied now", func(c *Config) { requestable(c); c.Capabilities.Deny = []string{Net} }, false, "denied by config"},
	}
	fetch := testTool(t, "fetch", nil, readOnlyOpen)
	ctx := sessionCtx(t, "S")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live := NewLive(newPolicy(t, requestable, nil))
			before := live.Current() // what Live.Request loads, just before the reload
			live.Replace(newPolicy(t, tt.next, nil))
			res := before.Request(ctx, "research", []string{Net})
			if res[0].Granted != tt.wantGranted || !strings.HasPrefix(res[0].Reason, tt.wantReason) {
				t.Errorf("request on the replaced version = %+v, want granted %v, reason %q...", res[0], tt.wantGranted, tt.wantReason)
			}
			if d := live.Decide(ctx, fetch); d.Allow != tt.wantGranted {
				t.Errorf("after the reload, fetch in the session = %v (%s), want %v", d.Allow, d.Rule, tt.wantGranted)
			}
		})
	}
}

// Requests racing a reload that makes their capability non-requestable
// leave no session with it: each was decided before the filter (and
// dropped by it) or after it (and refused).
func TestRequestConcurrentWithReplace(t *testing.T) {
	fetch := testTool(t, "fetch", nil, readOnlyOpen)
	ctxs := make([]context.Context, 32)
	for i := range ctxs {
		ctxs[i] = sessionCtx(t, fmt.Sprintf("s%d", i))
	}
	for round := range 100 {
		live := NewLive(newPolicy(t, func(c *Config) { c.Capabilities.Requestable = []string{Net} }, nil))
		next := newPolicy(t, nil, nil)
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			for _, ctx := range ctxs {
				live.Request(ctx, "research", []string{Net})
			}
		})
		wg.Go(func() {
			<-start
			live.Replace(next)
		})
		close(start)
		wg.Wait()
		for i, ctx := range ctxs {
			if d := live.Decide(ctx, fetch); d.Allow {
				t.Fatalf("round %d: session s%d keeps net after the reload made it non-requestable: %s", round, i, d.Rule)
			}
		}
	}
}

func TestHideDenied(t *testing.T) {
	for v, want := range map[string]bool{"": false, "show": false, "hide": true} {
		e := newPolicy(t, func(c *Config) { c.ListDenied = v }, nil)
		if e.HideDenied() != want {
			t.Errorf("list_denied %q: HideDenied = %v, want %v", v, !want, want)
		}
	}
}
