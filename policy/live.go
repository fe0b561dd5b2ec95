package policy

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// Live is the effective policy of a running gateway, replaced as a whole
// when the configuration is reloaded. Each decision reads one version, so
// a decision never mixes the rules of two configurations; calls decided
// before a reload keep their decision. Skill grants carry over to the new
// version for the capabilities it still lets a skill request, and are
// dropped for the others.
type Live struct {
	cur atomic.Pointer[Effective]
}

var (
	_ gateway.Policy      = (*Live)(nil)
	_ gateway.CallerRules = (*Live)(nil)
)

// NewLive serves e.
func NewLive(e *Effective) *Live {
	l := &Live{}
	l.cur.Store(e)
	return l
}

// Current is the version in force.
func (l *Live) Current() *Effective { return l.cur.Load() }

// Replace puts next in force. The sessions' skill grants move over where
// next still allows them (requestable, not denied); it returns the grants
// that were dropped. Skill requests are decided under the same lock by the
// version in force, so none decided by the old version lands after the
// filter.
func (l *Live) Replace(next *Effective) []SkillGrant {
	old := l.cur.Load()
	st := old.g
	next.g = st // one store: grants made meanwhile are not lost
	var dropped []SkillGrant
	st.mu.Lock()
	for session, caps := range st.grants {
		for c, skills := range caps {
			cfg := &next.cfg
			if !slices.Contains(cfg.Capabilities.Requestable, c) || slices.Contains(cfg.Capabilities.Deny, c) {
				for _, sk := range skills {
					dropped = append(dropped, SkillGrant{Session: session, Skill: sk, Capability: c})
				}
				delete(caps, c)
			}
		}
	}
	st.inForce = next
	l.cur.Store(next)
	st.mu.Unlock()
	return dropped
}

// The methods of [Effective], on the version in force.

// Decide implements [gateway.Policy].
func (l *Live) Decide(ctx context.Context, t *gateway.Tool) gateway.Decision {
	return l.cur.Load().Decide(ctx, t)
}
func (l *Live) HideDenied() bool                          { return l.cur.Load().HideDenied() }
func (l *Live) IdentityView(c *gateway.Call) gateway.View { return l.cur.Load().IdentityView(c) }
func (l *Live) HasCallerRules(c *gateway.Call) bool       { return l.cur.Load().HasCallerRules(c) }
func (l *Live) SandboxRoots() []string                    { return l.cur.Load().SandboxRoots() }
func (l *Live) NeedsApproval() bool                       { return l.cur.Load().NeedsApproval() }
func (l *Live) ApprovalChannel() string                   { return l.cur.Load().ApprovalChannel() }
func (l *Live) ApprovalTimeout() time.Duration            { return l.cur.Load().ApprovalTimeout() }
func (l *Live) HasSessionGrants(session string) bool      { return l.cur.Load().HasSessionGrants(session) }
func (l *Live) ForgetSession(session string)              { l.cur.Load().ForgetSession(session) }
func (l *Live) SkillGrants() []SkillGrant                 { return l.cur.Load().SkillGrants() }
func (l *Live) Explain(ctx context.Context, entries []ExplainTool) Report {
	return l.cur.Load().Explain(ctx, entries)
}

// Request applies a skill's capability requests under the version in force.
func (l *Live) Request(ctx context.Context, skill string, caps []string) []GrantResult {
	return l.cur.Load().Request(ctx, skill, caps)
}
