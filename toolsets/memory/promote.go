package memory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"text/tabwriter"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/gateway"
)

// Promotion outcomes of one candidate line.
const (
	OutcomePromoted       = "promoted"        // written to the store
	OutcomeWouldPromote   = "would_promote"   // dry run: would be written
	OutcomeAlreadyPresent = "already_present" // the store already has this candidate (promoted before)
	OutcomeDuplicate      = "duplicate"       // the store (or an earlier line) has a memory of the same scope and content
	OutcomeInvalid        = "invalid"         // the line is not a usable candidate (torn, bad JSON, invalid memory)
)

// PromoteReport says what [Promote] did, or in a dry run would do.
type PromoteReport struct {
	RunID  string `json:"run_id"`
	File   string `json:"file"`
	DryRun bool   `json:"dry_run"`
	// Candidates is the number of valid candidate lines.
	Candidates int `json:"candidates"`
	// Promoted is the number written to the store (in a dry run: that
	// would be written).
	Promoted int `json:"promoted"`
	// AlreadyPresent is the number the store already had. In a dry run
	// against a store that is not a [SourceLookup] it is always 0.
	AlreadyPresent int `json:"already_present"`
	// Duplicates is the number not written because the store, or an
	// earlier line of the run, has a memory of the same scope and content
	// ([Store.Write] keeps one). In a dry run against a store that is not
	// a [ContentLookup], only the earlier lines count.
	Duplicates int `json:"duplicates"`
	// Invalid is the number of lines that could not be used.
	Invalid int `json:"invalid"`
	// Outcomes has one entry per non-blank line, in file order.
	Outcomes []PromoteOutcome `json:"outcomes"`
}

// PromoteOutcome is what happened to one line of the candidate file.
type PromoteOutcome struct {
	Line        int    `json:"line"`
	Outcome     string `json:"outcome"`
	CandidateID string `json:"candidate_id,omitempty"`
	Scope       string `json:"scope,omitempty"`
	SourceID    string `json:"source_id,omitempty"`
	// MemoryID is the memory's ID in the store (promoted, already present,
	// or the one a duplicate repeats; empty in a dry run unless already
	// in the store).
	MemoryID string `json:"memory_id,omitempty"`
	// Error says why an invalid line was refused.
	Error string `json:"error,omitempty"`
	// Torn is set for a torn last line (a crash mid-write).
	Torn bool `json:"torn,omitempty"`
}

// Promote commits the candidate memories of run runID, read from
// candidatesPath, into store: each valid candidate is written with SourceID
// "<runID>/<candidate id>", so promoting a run twice stores nothing twice
// (the second time every candidate is already present). Lines that are not
// usable candidates, such as a torn last line left by a crash, are reported
// with their line number and skipped. With dryRun, nothing is written and the
// report says what would happen.
//
// A store error stops the promotion: the report then covers the lines
// handled so far, and the error is returned with it. Running Promote again
// after fixing the cause finishes the job without duplicates.
func Promote(ctx context.Context, store Store, candidatesPath, runID string, dryRun bool) (PromoteReport, error) {
	rep := PromoteReport{RunID: runID, File: candidatesPath, DryRun: dryRun, Outcomes: []PromoteOutcome{}}
	if store == nil {
		return rep, errors.New("promote: no memory store")
	}
	if runID == "" || strings.ContainsAny(runID, "/\\ \t\r\n") {
		return rep, fmt.Errorf("promote: invalid run ID %q", runID)
	}
	cands, bad, err := ReadCandidates(candidatesPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return rep, fmt.Errorf("run %s has no memory candidates file %s (nothing was written in candidate mode): %w", runID, candidatesPath, err)
		}
		return rep, fmt.Errorf("reading memory candidates of run %s: %w", runID, err)
	}
	rep.Candidates = len(cands)

	// Outcomes in line order: merge the candidates and the bad lines.
	var badOut []PromoteOutcome
	for _, e := range bad {
		o := PromoteOutcome{Outcome: OutcomeInvalid, Error: e.Error()}
		var le *LineError
		if errors.As(e, &le) {
			o.Line, o.Torn, o.Error = le.Line, le.Torn, le.Problem()
		}
		badOut = append(badOut, o)
	}
	rep.Invalid = len(badOut)
	lookup, _ := store.(SourceLookup)
	contents, _ := store.(ContentLookup)
	seen := map[string]string{}     // source ID -> memory ID (dry run)
	seenText := map[string]string{} // memoryKey -> memory ID (dry run)
	bi := 0
	flushBad := func(line int) {
		for bi < len(badOut) && (line < 0 || badOut[bi].Line < line) {
			rep.Outcomes = append(rep.Outcomes, badOut[bi])
			bi++
		}
	}
	for _, c := range cands {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		flushBad(c.Line)
		o := PromoteOutcome{Line: c.Line, CandidateID: c.ID, Scope: c.Scope, SourceID: runID + "/" + c.ID}
		if dryRun {
			text := memoryKey(c.Memory())
			if id, dup := seen[o.SourceID]; dup {
				o.Outcome, o.MemoryID = OutcomeAlreadyPresent, id
			} else if lookup != nil {
				m, ok, err := lookup.FindSource(ctx, o.SourceID)
				if err != nil {
					return rep, fmt.Errorf("line %d: looking up candidate %s: %w", c.Line, c.ID, err)
				}
				if ok {
					o.Outcome, o.MemoryID = OutcomeAlreadyPresent, m.ID
				}
			}
			if id, dup := seenText[text]; o.Outcome == "" && dup {
				o.Outcome, o.MemoryID = OutcomeDuplicate, id
			} else if o.Outcome == "" && contents != nil {
				m, ok, err := contents.FindContent(ctx, c.Scope, c.Content)
				if err != nil {
					return rep, fmt.Errorf("line %d: looking up candidate %s: %w", c.Line, c.ID, err)
				}
				if ok {
					o.Outcome, o.MemoryID = OutcomeDuplicate, m.ID
				}
			}
			if o.Outcome == "" {
				o.Outcome = OutcomeWouldPromote
			}
			seen[o.SourceID] = o.MemoryID
			if _, ok := seenText[text]; !ok {
				seenText[text] = o.MemoryID
			}
		} else {
			id, err := uuid.NewV7()
			if err != nil {
				return rep, err
			}
			m := c.Memory()
			m.ID, m.SourceID = id.String(), o.SourceID
			got, err := store.Write(ctx, m)
			if err != nil {
				return rep, fmt.Errorf("line %d: promoting candidate %s: %w", c.Line, c.ID, err)
			}
			o.MemoryID = got.ID
			switch {
			case got.ID == m.ID:
				o.Outcome = OutcomePromoted
			case got.SourceID == m.SourceID:
				o.Outcome = OutcomeAlreadyPresent
			default:
				o.Outcome = OutcomeDuplicate
			}
		}
		switch o.Outcome {
		case OutcomeAlreadyPresent:
			rep.AlreadyPresent++
		case OutcomeDuplicate:
			rep.Duplicates++
		default:
			rep.Promoted++
		}
		rep.Outcomes = append(rep.Outcomes, o)
	}
	flushBad(-1)
	return rep, nil
}

// WriteText writes the report for a terminal: one line per candidate line,
// then the totals.
func (r PromoteReport) WriteText(w io.Writer) error {
	var b strings.Builder
	if r.DryRun {
		fmt.Fprintf(&b, "Dry run: promoting the memory candidates of run %s (%s) would do this; nothing was written.\n", r.RunID, r.File)
	} else {
		fmt.Fprintf(&b, "Promoting the memory candidates of run %s (%s):\n", r.RunID, r.File)
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, o := range r.Outcomes {
		switch o.Outcome {
		case OutcomeInvalid:
			fmt.Fprintf(tw, "  line %d\tinvalid\t%s\n", o.Line, o.Error)
		case OutcomePromoted:
			fmt.Fprintf(tw, "  line %d\tpromoted\tcandidate %s -> memory %s (scope %s)\n", o.Line, o.CandidateID, o.MemoryID, o.Scope)
		case OutcomeWouldPromote:
			fmt.Fprintf(tw, "  line %d\twould promote\tcandidate %s (scope %s)\n", o.Line, o.CandidateID, o.Scope)
		case OutcomeAlreadyPresent:
			if o.MemoryID != "" {
				fmt.Fprintf(tw, "  line %d\talready present\tcandidate %s is memory %s (scope %s)\n", o.Line, o.CandidateID, o.MemoryID, o.Scope)
			} else {
				fmt.Fprintf(tw, "  line %d\talready present\tcandidate %s (scope %s)\n", o.Line, o.CandidateID, o.Scope)
			}
		case OutcomeDuplicate:
			if o.MemoryID != "" {
				fmt.Fprintf(tw, "  line %d\tduplicate\tcandidate %s says what memory %s says (scope %s)\n", o.Line, o.CandidateID, o.MemoryID, o.Scope)
			} else {
				fmt.Fprintf(tw, "  line %d\tduplicate\tcandidate %s says what an earlier line says (scope %s)\n", o.Line, o.CandidateID, o.Scope)
			}
		default:
			fmt.Fprintf(tw, "  line %d\t%s\tcandidate %s\n", o.Line, o.Outcome, o.CandidateID)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	verb := "promoted"
	if r.DryRun {
		verb = "would be promoted"
	}
	fmt.Fprintf(&b, "%s: %d %s, %d already present", gateway.Plural(r.Candidates, "candidate", "candidates"), r.Promoted, verb, r.AlreadyPresent)
	if r.Duplicates > 0 {
		fmt.Fprintf(&b, ", %s", gateway.Plural(r.Duplicates, "duplicate", "duplicates"))
	}
	if r.Invalid > 0 {
		fmt.Fprintf(&b, "; %s skipped", gateway.Plural(r.Invalid, "invalid line", "invalid lines"))
	}
	b.WriteString(".\n")
	_, err := io.WriteString(w, b.String())
	return err
}
