package gateway

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

type forecastOut struct {
	City  string        `json:"city" jsonschema_description:"The city."`
	Days  []forecastDay `json:"days"`
	Note  string        `json:"note,omitempty"`
	Issue time.Time     `json:"issued"`
}

type forecastDay struct {
	High  float64 `json:"high"`
	Rain  int     `json:"rain_pct" jsonschema:"minimum=0,maximum=100"`
	Label string  `json:"label,omitempty"`
}

// The output schema is generated from Out like the input schema: flat,
// without titles or refs, properties in field order.
func TestTypedToolOutSchemaGolden(t *testing.T) {
	tool, err := NewTypedToolOut(ToolDef{Name: "forecast"}, func(ctx context.Context, p weatherParams) (*Result, forecastOut, error) {
		return nil, forecastOut{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s := string(tool.OutputSchema)
	if strings.Contains(s, `"title"`) || strings.Contains(s, `$ref`) || strings.Contains(s, `$defs`) {
		t.Errorf("output schema has titles or refs: %s", s)
	}
	if !strings.HasPrefix(s, `{"properties":{"city":`) {
		t.Errorf("properties are not in field order: %s", s)
	}
	golden(t, "typed_output_schema.json", append([]byte(s), '\n'))
	if _, err := NewTypedToolOut(ToolDef{Name: "x", OutputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, weatherParams) (*Result, forecastOut, error) {
		return nil, forecastOut{}, nil
	}); err == nil || !strings.Contains(err.Error(), "OutputSchema must be empty") {
		t.Errorf("a hand-written output schema beside a typed output: %v", err)
	}
	if _, err := NewTypedToolOut(ToolDef{Name: "x"}, func(context.Context, weatherParams) (*Result, []string, error) {
		return nil, nil, nil
	}); err == nil || !strings.Contains(err.Error(), "must be a struct") {
		t.Errorf("a non-struct output type: %v", err)
	}
}

// The handler's Out becomes the structured content when it matches the
// output schema; when it does not, the call is a runtime error that says
// where, and nothing breaking the schema reaches the client.
func TestTypedToolOutChecksOutput(t *testing.T) {
	issued := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	good := forecastOut{City: "Oslo", Days: []forecastDay{{High: 3.5, Rain: 40}}, Issue: issued}
	for _, tc := range []struct {
		name       string
		res        *Result
		out        forecastOut
		err        error
		wantKind   Kind
		wantMsg    string
		wantStruct string
		wantText   string
	}{
		{name: "valid", res: OkText("3.5 degrees"), out: good,
			wantStruct: `{"city":"Oslo","days":[{"high":3.5,"rain_pct":40}],"issued":"2026-11-24T01:00:00Z"}`, wantText: "3.5 degrees"},
		{name: "nil result: the text is the JSON", out: good,
			wantStruct: `{"city":"Oslo","days":[{"high":3.5,"rain_pct":40}],"issued":"2026-11-24T01:00:00Z"}`,
			wantText:   `{"city":"Oslo","days":[{"high":3.5,"rain_pct":40}],"issued":"2026-11-24T01:00:00Z"}`},
		{name: "nil slice", res: OkText("x"), out: forecastOut{City: "Oslo", Issue: issued},
			wantKind: KindRuntime, wantMsg: "structured output does not match the tool's output schema: at '/days': type array, got null"},
		{name: "out of bounds", res: OkText("x"), out: forecastOut{City: "Oslo", Days: []forecastDay{{Rain: 140}}, Issue: issued},
			wantKind: KindRuntime, wantMsg: "at '/days/0/rain_pct': maximum 100, got 140"},
		{name: "not encodable", res: OkText("x"), out: forecastOut{City: "Oslo", Days: []forecastDay{{High: math.NaN()}}},
			wantKind: KindRuntime, wantMsg: "encoding structured output"},
		{name: "error result: out ignored", res: Error("no such city", "No city"), out: forecastOut{},
			wantKind: KindToolError, wantMsg: "no such city"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := Must(NewTypedToolOut(ToolDef{Name: "forecast"}, func(ctx context.Context, p weatherParams) (*Result, forecastOut, error) {
				return tc.res, tc.out, tc.err
			}))
			ts, _ := NewToolset("w", tool)
			cat := NewCatalog(nil)
			_ = cat.Add(context.Background(), ts)
			p := NewPipeline(&Options{Tools: cat})
			res := p.Call(context.Background(), &Call{Name: "forecast", Arguments: json.RawMessage(`{"city":"Oslo","days":3,"unit":"celsius","home":{"street":"x 1"}}`)})
			if tc.wantKind != "" {
				if !res.IsError || res.Kind != tc.wantKind || !strings.Contains(res.Message, tc.wantMsg) || len(res.Structured) > 0 {
					t.Fatalf("got error=%v kind %q message %q structured %s; want kind %q with %q", res.IsError, res.Kind, res.Message, res.Structured, tc.wantKind, tc.wantMsg)
				}
				return
			}
			if res.IsError || string(res.Structured) != tc.wantStruct || res.OutputText() != tc.wantText {
				t.Fatalf("got error=%v %q structured %s text %q", res.IsError, res.Message, res.Structured, res.OutputText())
			}
		})
	}
}
