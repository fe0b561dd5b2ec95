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

// PromptResult is a rendered prompt.
type PromptResult struct {
	Description string
	Messages    []PromptMessage
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
// change at run time.
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
// resources change at run time.
type ResourcesChangeNotifier interface {
	OnResourcesChanged(func())
}
