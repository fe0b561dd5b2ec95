package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
)

// DisplayBlock is a typed block of output for humans (a UI or a terminal),
// kept apart from the output for the model. Every block has a "type"; types
// are registered with [RegisterDisplayBlock] so that decoding picks the right
// Go type. A block whose type is not registered decodes to an [UnknownBlock],
// which keeps every field and encodes back to the same JSON, so a block
// passes through a gateway that does not know it without loss.
type DisplayBlock interface {
	// BlockType is the block's "type".
	BlockType() string
}

// Built-in display block types.
const (
	BlockBrief = "brief"
	BlockDiff  = "diff"
)

// BriefBlock is a one-line summary of a call for humans. The first brief
// block of a result is its [Result.Brief].
type BriefBlock struct {
	Text string `json:"text"`
}

// BlockType implements [DisplayBlock].
func (BriefBlock) BlockType() string { return BlockBrief }

// DiffBlock shows a change to a file as a unified diff.
type DiffBlock struct {
	Path string `json:"path"`
	// Unified is the diff in unified format (without file headers when the
	// file is new). It may be cut short; Truncated then says so.
	Unified   string `json:"unified"`
	Added     int    `json:"added"`
	Removed   int    `json:"removed"`
	Created   bool   `json:"created,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// BlockType implements [DisplayBlock].
func (DiffBlock) BlockType() string { return BlockDiff }

// UnknownBlock is a display block of a type this program does not know. It
// keeps the block's JSON and encodes back to it unchanged.
type UnknownBlock struct {
	Type string
	JSON json.RawMessage
}

// BlockType implements [DisplayBlock].
func (b UnknownBlock) BlockType() string { return b.Type }

// MarshalJSON returns the block's original JSON.
func (b UnknownBlock) MarshalJSON() ([]byte, error) {
	if len(b.JSON) == 0 {
		return nil, fmt.Errorf("unknown display block %q has no JSON", b.Type)
	}
	return b.JSON, nil
}

// MarshalJSON encodes the block with its "type".
func (b BriefBlock) MarshalJSON() ([]byte, error) {
	type plain BriefBlock
	return marshalTyped(BlockBrief, plain(b))
}

// MarshalJSON encodes the block with its "type".
func (b DiffBlock) MarshalJSON() ([]byte, error) {
	type plain DiffBlock
	return marshalTyped(BlockDiff, plain(b))
}

var displayRegistry = struct {
	sync.RWMutex
	types map[string]func() DisplayBlock
}{types: map[string]func() DisplayBlock{
	BlockBrief: func() DisplayBlock { return new(BriefBlock) },
	BlockDiff:  func() DisplayBlock { return new(DiffBlock) },
}}

// RegisterDisplayBlock registers a display block type so that
// [UnmarshalDisplayBlock] decodes blocks of that type into the value newBlock
// returns (a pointer; decoding then stores the pointed-to value). The value's
// MarshalJSON must write the "type" member. It panics on an empty or
// duplicate type: registration is a programming step, done from init.
func RegisterDisplayBlock(typ string, newBlock func() DisplayBlock) {
	if typ == "" || newBlock == nil {
		panic("gateway: RegisterDisplayBlock with empty type or nil constructor")
	}
	displayRegistry.Lock()
	defer displayRegistry.Unlock()
	if _, dup := displayRegistry.types[typ]; dup {
		panic(fmt.Sprintf("gateway: display block type %q registered twice", typ))
	}
	displayRegistry.types[typ] = newBlock
}

// UnmarshalDisplayBlock decodes one display block by its "type". Unknown
// types, and known types whose fields do not decode cleanly, become an
// [UnknownBlock] holding the original bytes.
func UnmarshalDisplayBlock(data []byte) (DisplayBlock, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("decoding display block: %w", err)
	}
	if head.Type == "" {
		return nil, fmt.Errorf("decoding display block: missing \"type\"")
	}
	displayRegistry.RLock()
	newBlock := displayRegistry.types[head.Type]
	displayRegistry.RUnlock()
	unknown := UnknownBlock{Type: head.Type, JSON: bytes.Clone(data)}
	if newBlock == nil {
		return unknown, nil
	}
	// Decode, then check that encoding gives back the same JSON: a block
	// with members the Go type does not have stays an UnknownBlock.
	ptr := newBlock()
	if err := json.Unmarshal(data, ptr); err != nil {
		return unknown, nil
	}
	block := derefBlock(ptr)
	out, err := json.Marshal(block)
	if err != nil || !jsonEqual(data, out) {
		return unknown, nil
	}
	return block, nil
}

// derefBlock turns the *T the registry hands out into the T value, for the
// built-in block types, so that callers can type-switch on values.
func derefBlock(b DisplayBlock) DisplayBlock {
	switch v := b.(type) {
	case *BriefBlock:
		return *v
	case *DiffBlock:
		return *v
	}
	return b
}

// unmarshalDisplay decodes a JSON array of display blocks.
func unmarshalDisplay(data []byte) ([]DisplayBlock, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("decoding display: %w", err)
	}
	blocks := make([]DisplayBlock, 0, len(raws))
	for i, r := range raws {
		b, err := UnmarshalDisplayBlock(r)
		if err != nil {
			return nil, fmt.Errorf("display[%d]: %w", i, err)
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}
