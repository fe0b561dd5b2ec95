package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Rounds of a call (SEP-2322 multi round-trip, 2026-07-28).
//
// A tool (an upstream's, relayed) may end a round of a call input-required:
// it asks the client something (elicitation, sampling, roots) and hands it
// an opaque request state; the client repeats the call with its answers
// and the state. The round stage stands between the client and the tool:
//
//   - it seals the tool's state into one of its own ([RoundStates],
//     roundstate.go), bound to the call (tool, digest of the validated
//     arguments) and to the caller (identity, OAuth client, client name),
//     with an expiry, a round number, the ID of the call that began the
//     exchange and a nonce, under an HMAC key;
//   - on the repeat it opens the state, refuses one that is forged,
//     altered, expired, already used or minted for another call or caller
//     (a request error, so the client gets a JSON-RPC error), and hands the
//     tool its own state back;
//   - it records every round: relay.input_required when a round asks,
//     relay.round when the client answers (with the answer ids), each with
//     the call it continues.
//
// The stage runs after the approval stage: a round's state is minted only
// for a call that passed every stage before the tool, so the repeat of a
// call that needed approval is not asked again (see approveStage).
//
// Rounds of prompts/get are sealed and recorded the same way by the
// mirror (promptRound, below). A tool that asks with server-to-client
// requests is asked in rounds too, for a client that can only be asked so
// (exchange.go).
//
// The key is derived from the replicas' shared session keys when there are
// some (any replica opens a state another sealed, so a round of an
// upstream's own state may be answered to any of them), else drawn at
// start. What stays per replica: the nonces already used (a state replayed
// to another replica within its expiry is not caught), and exchanges.

// roundPrefix marks a state minted by the round stage, so that the
// approval stage can tell it from its own.
const roundPrefix = "tgr1."

// RoundTTL is how long a client has to answer a round.
const RoundTTL = 30 * time.Minute

// roundRefusal refuses a request whose round state does not hold: its
// params are invalid (-32602).
func roundRefusal(msg string) *RequestError {
	return &RequestError{Code: mcp.INVALID_PARAMS, Message: msg}
}

// IsRoundState reports whether state is one the round stage minted (not
// whether it is valid: the round stage checks that).
func IsRoundState(state string) bool { return strings.HasPrefix(state, roundPrefix) }

// roundStage seals and opens the request states of a call's rounds and
// records each round; see the comment at the top of this file.
func (p *Pipeline) roundStage(next Handler) Handler {
	return func(ctx context.Context, call *Call) *Result {
		record := func(typ string, fields map[string]any) { p.event(typ, call, fields) }
		sealed := IsRoundState(call.RequestState)
		if sealed {
			inner, err := p.openRound(call, call.RequestState, call.InputResponses, record)
			if err != nil {
				return RequestErrorResult(roundRefusal(fmt.Sprintf("call of %q: %v; repeat the call without it to begin again", call.Name, err)))
			}
			call.RequestState = inner
		}
		var res *Result
		switch id, parked := strings.CutPrefix(call.RequestState, parkPrefix); {
		case parked && sealed:
			res = p.resumeExchange(ctx, call, id)
		case parked: // names an exchange, but not in a state toolgate sealed
			p.event("relay.round", call, map[string]any{"status": "refused", "error": ErrRoundForged.Error()})
			res = RequestErrorResult(roundRefusal(fmt.Sprintf("call of %q: %v", call.Name, ErrRoundForged)))
		case canAskInRounds(ctx):
			res = p.runExchange(ctx, call, next)
		default:
			res = next(ctx, call)
		}
		if res.Kind == KindInputRequired {
			_, why, refusal := checkAsks(ctx, "call of "+strconv.Quote(call.Name), "the tool", res.InputRequests)
			if why != "" {
				p.event("relay.input_required", call, map[string]any{"status": "refused", "error": why})
				p.endExchange(res)
				return RuntimeErrorResult(call.Name, errors.New(why))
			}
			if refusal != nil {
				p.event("relay.input_required", call, map[string]any{"status": "refused", "error": refusal.Message})
				p.endExchange(res)
				return RequestErrorResult(refusal)
			}
			res.RequestState = p.sealRound(call, res.RequestState, res.InputRequests, record)
		}
		return res
	}
}

// checkAsks checks a round's input requests in one pass, decoding each
// once, and returns them decoded for the wire, or why they cannot be put
// to the client of ctx: why, when a request is unaskable, or refusal,
// when the client did not declare what a request asks.
//
// Unaskable: a client can be asked in a round only elicitation/create,
// sampling/createMessage and roots/list (basic/patterns/mrtr), each with
// params of its method. A tool (or the upstream it relays) that asks
// anything else, say that the client call a tool, is not passed on to
// the client, whatever its era or capabilities: the call fails (a runtime
// error), a prompts/get is refused (-32603), and the round is recorded
// refused. It wins over what the client declared: the request is the
// tool's fault, not the client's.
//
// Undeclared: a 2026-07-28 client is asked only what the
// clientCapabilities of its request (what: a call, a prompts/get, whose
// asker asks) declare: an elicitation (of the mode asked), sampling,
// roots (basic/patterns/mrtr: the requests a server may put in
// inputRequests are the client's declared features); a tool, or the
// upstream it relays, that asks anyway would hand the client an
// input_required it cannot answer. The refusal is -32021 (missing
// required client capability), with requiredCapabilities, as a request
// that needs a capability the client did not declare. Other callers
// (2025-era sessions, where mcp-go asks with server-to-client requests
// that check the session's capabilities; calls without an MCP client)
// are not checked here. The round stage checks the rounds of calls,
// promptInputRequired those of prompts/get.
func checkAsks(ctx context.Context, what, asker string, requests map[string]json.RawMessage) (reqs mcp.InputRequests, why string, refusal *RequestError) {
	c, modern := ClientFrom(ctx).(roundsClient)
	modern = modern && c.Modern()
	var caps mcp.ClientCapabilities
	if modern {
		caps, _ = capabilitiesOf(c)
	}
	reqs = make(mcp.InputRequests, len(requests))
	need := map[string]map[string]any{}
	var asks []string
	for _, id := range slices.Sorted(maps.Keys(requests)) {
		var r mcp.InputRequest
		err := json.Unmarshal(requests[id], &r)
		if err != nil && r.Method == "" {
			// The request is no object with a string method; but for a
			// "method" of another type beside a string one, no method
			// decodes either way: name the one a lenient decode finds.
			var head struct {
				Method mcp.MCPMethod `json:"method"`
			}
			_ = json.Unmarshal(requests[id], &head)
			r.Method = head.Method
		}
		method := string(r.Method)
		switch {
		case method != MethodElicitation && method != MethodSampling && method != string(mcp.MethodListRoots):
			return nil, fmt.Sprintf("the round asks input request %q (%s): not a request a client can be asked in a round (only %s, %s, %s)",
				id, method, MethodElicitation, MethodSampling, mcp.MethodListRoots), nil
		case err != nil:
			return nil, fmt.Sprintf("the round asks input request %q (%s), which does not decode: %v", id, method, err), nil
		}
		reqs[id] = r
		if !modern {
			continue
		}
		switch method {
		case MethodElicitation:
			if !elicitModeDeclared(caps, r.Elicitation.Mode) {
				mode := mcp.ElicitationModeForm
				if r.Elicitation.Mode == mcp.ElicitationModeURL {
					mode = mcp.ElicitationModeURL
				}
				if need["elicitation"] == nil {
					need["elicitation"] = map[string]any{}
				}
				need["elicitation"][mode] = struct{}{}
				asks = append(asks, fmt.Sprintf("%q (%s, %s mode)", id, method, mode))
			}
		case MethodSampling:
			if caps.Sampling == nil {
				need["sampling"] = map[string]any{}
				asks = append(asks, fmt.Sprintf("%q (%s)", id, method))
			}
		case string(mcp.MethodListRoots):
			if caps.Roots == nil {
				need["roots"] = map[string]any{}
				asks = append(asks, fmt.Sprintf("%q (%s)", id, method))
			}
		}
	}
	if len(need) == 0 {
		return reqs, "", nil
	}
	needed, _ := json.Marshal(need)
	data, _ := json.Marshal(map[string]json.RawMessage{"requiredCapabilities": needed})
	return nil, "", &RequestError{Code: mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, Data: data, Message: fmt.Sprintf(
		"%s: %s asks the client %s, which the request's clientCapabilities do not declare; declare %s to be asked",
		what, asker, strings.Join(asks, ", "), needed)}
}

// openRound opens the state the repeat of bind (a call, or a prompts/get)
// carries with its answers, sets bind.Round and returns the inner state of
// whoever asked; the round, or its refusal, is recorded (relay.round).
func (p *Pipeline) openRound(bind *Call, state string, answers map[string]json.RawMessage, record func(string, map[string]any)) (string, error) {
	st, err := p.rounds.Open(state, bind)
	if err != nil {
		record("relay.round", map[string]any{"status": "refused", "error": err.Error()})
		return "", err
	}
	bind.Round = &Round{N: st.N + 1, Of: st.Of}
	fields := map[string]any{"status": "ok", "round": bind.Round.N, "answers": slices.Sorted(maps.Keys(answers))}
	if st.Of != "" {
		fields["of"] = st.Of
	}
	record("relay.round", fields)
	return st.State, nil
}

// sealRound seals the inner state of a round of bind that asks requests,
// and records it (relay.input_required, with the method of each request).
func (p *Pipeline) sealRound(bind *Call, inner string, requests map[string]json.RawMessage, record func(string, map[string]any)) string {
	asks := make(map[string]string, len(requests))
	for id, raw := range requests {
		var r struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(raw, &r)
		asks[id] = r.Method
	}
	n, of := 1, bind.ID
	if bind.Round != nil {
		n, of = bind.Round.N, bind.Round.Of
	}
	fields := map[string]any{"status": "ok", "round": n, "requests": asks}
	if of != "" {
		fields["of"] = of
	}
	record("relay.input_required", fields)
	return p.rounds.Seal(bind, inner, RoundTTL)
}

// Rounds of prompts/get. Prompts do not pass through the pipeline (no
// policy, no call records), but a prompt of an upstream may ask in rounds
// as a tool does: the mirror seals and opens its states with the same
// keys, bound to the prompt, its arguments and the caller, and records the
// rounds as events that name the prompt.

// promptRound reads the round a prompts/get repeats, if any: it returns
// what the state is bound to, and the round with the source's own state
// (nil for a first round). A state that does not open is refused.
func (m *MCPServer) promptRound(ctx context.Context, name string, req mcp.GetPromptRequest) (*Call, *PromptRound, error) {
	bind := withCaller(ctx, &Call{Name: "prompt " + name, Args: req.Params.Arguments})
	responses := rawResponses(req.Params.InputResponses)
	if req.Params.RequestState == "" && len(responses) == 0 {
		return bind, nil, nil
	}
	round := &PromptRound{InputResponses: responses}
	if req.Params.RequestState != "" {
		inner, err := m.opts.Pipeline.openRound(bind, req.Params.RequestState, responses, m.opts.Pipeline.promptRecorder(name, bind))
		if err != nil {
			return nil, nil, roundRefusal(fmt.Sprintf("prompt %q: %v; get it again without it to begin again", name, err))
		}
		round.RequestState = inner
	}
	return bind, round, nil
}

// promptInputRequired answers a prompts/get round that asks the client
// of ctx: resultType input_required with the requests and the sealed
// state. A round that asks what no client can be asked, or a 2026-07-28
// client what its request did not declare (checkAsks), is refused and
// recorded so, as a call's is.
func (m *MCPServer) promptInputRequired(ctx context.Context, bind *Call, res *PromptResult) (*mcp.GetPromptResult, error) {
	name := strings.TrimPrefix(bind.Name, "prompt ")
	record := m.opts.Pipeline.promptRecorder(name, bind)
	reqs, why, refusal := checkAsks(ctx, "prompt "+strconv.Quote(name), "the prompt", res.InputRequests)
	if why != "" {
		record("relay.input_required", map[string]any{"status": "refused", "error": why})
		return nil, &RequestError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf("prompt %q: %s", name, why)}
	}
	if refusal != nil {
		record("relay.input_required", map[string]any{"status": "refused", "error": refusal.Message})
		return nil, refusal
	}
	state := m.opts.Pipeline.sealRound(bind, res.RequestState, res.InputRequests, record)
	return &mcp.GetPromptResult{
		Result:               mcp.Result{ResultType: mcp.ResultTypeInputRequired},
		MultiRoundTripResult: mcp.MultiRoundTripResult{InputRequests: reqs, RequestState: state},
		Messages:             []mcp.PromptMessage{},
	}, nil
}

// inputRequests decodes a round's raw requests for the wire (a call's
// round, which the round stage checked: checkAsks).
func inputRequests(raw map[string]json.RawMessage) (mcp.InputRequests, error) {
	reqs := make(mcp.InputRequests, len(raw))
	for id, b := range raw {
		var r mcp.InputRequest
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("input request %q does not encode: %w", id, err)
		}
		reqs[id] = r
	}
	return reqs, nil
}

// promptRecorder records the events of a round of prompts/get, which is
// no call: they name the prompt and the caller.
func (p *Pipeline) promptRecorder(prompt string, bind *Call) func(string, map[string]any) {
	return func(typ string, fields map[string]any) {
		fields["prompt"] = prompt
		p.callerEvent(typ, bind, fields)
	}
}

// rawResponses keeps a client's answers to a round raw, by request id.
func rawResponses(in mcp.InputResponses) map[string]json.RawMessage {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, len(in))
	for id, r := range in {
		if b, err := json.Marshal(r); err == nil {
			out[id] = b
		}
	}
	return out
}
