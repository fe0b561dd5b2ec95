package gateway

import (
	"context"
	"encoding/json"
)

// Besides tools, the gateway serves MCP prompts (skills, upstream prompts)
// and resources (artifacts, upstream resources). Sources of them register
// with [MCPServer.AddPromptSource] and [MCPServer.AddResourceSource]; the
// mirror lists them and routes prompts/get and resources/read to them.

// Prompt is an MCP prompt the gateway serves.
type Prompt struct {
	Name        string
	Title       string
	Description string
	Arguments   []PromptArgument
	Meta        map[string]json.RawMessage
	// Tool, if set, names the tool whose reach the prompt shares (the
	// skills' prompts follow load_skill): a caller whose view does not
	// admit that tool, or whom the policy does not allow it, is neither
	// listed the prompt nor can get it.
	Tool string
	// Get renders the prompt with the client's arguments.
	Get func(ctx context.Context, args map[string]string) (*PromptResult, error)
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name        string
	Title       string
	Description string
	Required    bool
}

// PromptResult is a rendered prompt, or a round of prompts/get that needs
// the client's answers first (2026-07-28 multi round-trip, SEP-2322):
// InputRequests (each a raw {"method", "params"} by id) and the source's
// own RequestState, as in a tool's [Result]. The mirror seals the state
// and hands it back to the source, with the client's answers, in the
// [PromptRound] of the repeat.
type PromptResult struct {
	Description   string
	Messages      []PromptMessage
	InputRequests map[string]json.RawMessage
	RequestState  string
}

// PromptRound is a client's answers to an earlier round of a prompts/get,
// with the source's own state of that round.
type PromptRound struct {
	InputResponses map[string]json.RawMessage
	RequestState   string
}

type promptRoundKey struct{}

// PromptRoundFrom returns the round a prompts/get answers, or nil.
func PromptRoundFrom(ctx context.Context) *PromptRound {
	r, _ := ctx.Value(promptRoundKey{}).(*PromptRound)
	return r
}

// PromptMessage is one message of a rendered prompt; Role is "user" or
// "assistant".
type PromptMessage struct {
	Role    string
	Content Part
}

// PromptSource offers prompts. Sources whose prompts change implement
// PromptsChangeNotifier.
type PromptSource interface {
	Prompts(ctx context.Context) ([]Prompt, error)
}

// PromptsChangeNotifier is implemented by prompt sources whose prompts
// change at run time. As with [ChangeNotifier], clients are told of every
// call of the callback.
type PromptsChangeNotifier interface {
	OnPromptsChanged(func())
}

// Resource is an MCP resource the gateway serves.
type Resource struct {
	URI         string
	Name        string
	Title       string
	Description string
	MIMEType    string
	Size        *int64
	Meta        map[string]json.RawMessage
	// Read returns the resource's contents.
	Read func(ctx context.Context) ([]ResourceContents, error)
}

// ResourceTemplate is an MCP resource template (RFC 6570 URI template).
type ResourceTemplate struct {
	URITemplate string
	Name        string
	Title       string
	Description string
	MIMEType    string
	Meta        map[string]json.RawMessage
	// Read returns the contents of a resource whose URI matches the
	// template.
	Read func(ctx context.Context, uri string) ([]ResourceContents, error)
}

// ResourceSource offers resources and resource templates. Sources whose
// resources change implement ResourcesChangeNotifier.
type ResourceSource interface {
	Resources(ctx context.Context) ([]Resource, []ResourceTemplate, error)
}

// ResourcesChangeNotifier is implemented by resource sources whose
// resources change at run time. As with [ChangeNotifier], clients are
// told of every call of the callback.
type ResourcesChangeNotifier interface {
	OnResourcesChanged(func())
}

// ResourceSubscriber is implemented by resource sources whose resources can
// be watched (resources/subscribe). The mirror subscribes the source that
// serves a URI when the first client subscribes to it, unsubscribes it when
// the last one unsubscribes or ends its session, and passes each update the
// source reports to the sessions subscribed to that URI (only those). When
// another source comes to serve a subscribed URI (the first one removed),
// the subscription moves to it: the old one is unsubscribed, the new one
// subscribed, and only the new one's updates are passed on. A
// source that is not a ResourceSubscriber serves resources that do not
// change while served; subscribing to them succeeds and never notifies.
type ResourceSubscriber interface {
	// SubscribeResource starts watching uri; an error refuses the client's
	// subscription.
	SubscribeResource(ctx context.Context, uri string) error
	// UnsubscribeResource stops watching uri.
	UnsubscribeResource(ctx context.Context, uri string) error
	// OnResourceUpdated registers f, called with the URI of a watched
	// resource that may have changed and the notification's params (at
	// least "uri"). f does not block.
	OnResourceUpdated(f func(uri string, params map[string]any))
}

// CompletionRequest asks for completions of one argument of a prompt or
// resource template (completion/complete).
type CompletionRequest struct {
	// Argument is the argument's name and Value what the user typed so far.
	Argument string
	Value    string
	// Context holds the arguments already resolved, if the client sent any.
	Context map[string]string
}

// Completion is the answer to a [CompletionRequest].
type Completion struct {
	Values  []string
	Total   int
	HasMore bool
}

// PromptCompleter is implemented by prompt sources that complete the
// arguments of their prompts. The mirror routes completion/complete for a
// ref/prompt to the source that serves the prompt; prompts of other
// sources complete to nothing.
type PromptCompleter interface {
	// CompletePrompt completes an argument of the prompt served as name.
	CompletePrompt(ctx context.Context, name string, req CompletionRequest) (*Completion, error)
}

// ResourceCompleter is implemented by resource sources that complete the
// variables of their resource templates. The mirror routes
// completion/complete for a ref/resource to the source that serves the
// template (or the resource).
type ResourceCompleter interface {
	// CompleteResource completes a variable of the resource template (or
	// resource) uri.
	CompleteResource(ctx context.Context, uri string, req CompletionRequest) (*Completion, error)
}
