package main

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/attribution"
	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/evidence"
	"github.com/driftprobe/driftprobe/ghissue"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/probes"
	"github.com/driftprobe/driftprobe/storage"
)

// docs/CLI.md documents every field each command's --json prints: each
// json tag of the structs it marshals (and of the structs they nest) is
// named, in backquotes, in the command's own paragraph (a **`cmd --json`**
// heading up to the next one). A field added to the code without a word
// in the docs fails here. Outputs built as maps or from types local to a
// command (corpus, outbox's wrapping objects) list their keys by hand.
func TestCLIDocsNameEveryJSONField(t *testing.T) {
	b, err := os.ReadFile("../../docs/CLI.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	section := func(from, to string) string {
		t.Helper()
		i := strings.Index(doc, from)
		if i < 0 {
			t.Fatalf("docs/CLI.md: no %q", from)
		}
		j := strings.Index(doc[i:], to)
		if j < 0 {
			t.Fatalf("docs/CLI.md: no %q after %q", to, from)
		}
		return doc[i : i+j]
	}
	// The paragraphs after the events' run from their heading to the next.
	heads := []string{"**`diff --json`**", "**`compare --json`**", "**`evidence --json`**",
		"**`replay --json`**", "**`outbox --json`**", "**`attribute --json`**", "**`db stats --json`**",
		"**`db prune --json`**", "**`db check --json`**", "**`corpus --json`**", "**`plan --json`**",
		"**`providers --json`**"}
	after := map[string]string{}
	for i, h := range heads {
		if i+1 < len(heads) {
			after[h] = heads[i+1]
		}
	}
	own := func(head string) string {
		t.Helper()
		if next := after[head]; next != "" {
			return section(head, next)
		}
		i := strings.Index(doc, head)
		if i < 0 {
			t.Fatalf("docs/CLI.md: no %q", head)
		}
		return doc[i:]
	}

	// run --json's events are events --json's, and evidence's event too:
	// documented there.
	skip := map[reflect.Type]bool{reflect.TypeOf(diff.Event{}): true}
	typeOf := func(v any) reflect.Type { return reflect.TypeOf(v) }
	for _, c := range []struct {
		name string
		doc  string
		typs []reflect.Type
		keys []string // of maps and command-local types, from the code
		min  int      // fewer tags than this: the reflection found nothing
	}{
		{"run --json", section("**`run --json`**", "**`events --json`**"), []reflect.Type{typeOf(app.RunJSON{}), typeOf(runFailure{})}, nil, 40},
		{"events --json", section("**`events --json`**", "Run ids are"), []reflect.Type{typeOf(diff.Event{})}, nil, 40},
		{"diff --json", own(heads[0]), []reflect.Type{typeOf(diff.RunDiff{})}, nil, 20},
		// compare --run --json prints runFailure when the run was recorded
		// but not compared.
		{"compare --json", own(heads[1]), []reflect.Type{typeOf(diff.Comparison{}), typeOf(runFailure{})}, nil, 60},
		{"evidence --json", own(heads[2]), []reflect.Type{typeOf(evidence.Record{})}, nil, 60},
		{"replay --json", own(heads[3]), []reflect.Type{typeOf(app.ReplayReport{})}, nil, 20},
		// outbox --json: the pending rows' array, or with --send/--backfill
		// an object of ghissue.Result (--send), backfilled, pending, holds.
		{"outbox --json", own(heads[4]), []reflect.Type{typeOf(ghissue.PendingRow{}), typeOf(ghissue.Hold{}), typeOf(ghissue.Result{})},
			[]string{"backfilled", "pending", "holds"}, 35},
		{"attribute --json", own(heads[5]), []reflect.Type{typeOf(attribution.Report{})}, nil, 20},
		{"db stats --json", own(heads[6]), []reflect.Type{typeOf(storage.Stats{})}, nil, 9},
		{"db prune --json", own(heads[7]), []reflect.Type{typeOf(storage.PruneResult{})}, nil, 10},
		{"db check --json", own(heads[8]), []reflect.Type{typeOf(storage.CheckReport{})}, nil, 20},
		// corpuscmd.go: lint's two maps, lock's map, list's item type.
		{"corpus --json", own(heads[9]), nil, []string{
			"ok", "errors", // lint, failing
			"name", "version", "sha256", "probes", "categories", "roles", "warnings", // lint
			"locked", "embedded", // lock
			"id", "tags", "role", "expect", // list's items (and sha256)
			"benign_control", "borderline", "positive_control", // roles' keys
		}, 15},
		{"plan --json", own(heads[10]), []reflect.Type{typeOf(planOutput{})}, nil, 25},
		{"providers --json", own(heads[11]), []reflect.Type{typeOf(probes.Info{})}, nil, 10},
	} {
		tags := append([]string{}, c.keys...)
		for _, typ := range c.typs {
			tags = append(tags, jsonTags(typ, map[reflect.Type]bool{typ: true}, skip, true)...)
		}
		if len(tags) < c.min {
			t.Fatalf("%s: only %d json tags found: %v", c.name, len(tags), tags)
		}
		for _, tag := range tags {
			if !strings.Contains(c.doc, "`"+tag+"`") {
				t.Errorf("docs/CLI.md, %s: field `%s` is not documented", c.name, tag)
			}
		}
	}
}

// jsonTags returns the json field names of t's struct, and of the structs
// its fields hold (through pointers, slices and maps), but not of the
// types in skip (other than t itself when top is true).
func jsonTags(t reflect.Type, seen, skip map[reflect.Type]bool, top bool) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || (skip[t] && !top) {
		return nil
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
			continue
		case name == "" && f.Anonymous:
			out = append(out, jsonTags(f.Type, seen, skip, false)...)
			continue
		case name == "":
			name = f.Name // encoding/json's name for an untagged field
		}
		out = append(out, name)
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map || ft.Kind() == reflect.Array {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && !seen[ft] && ft.PkgPath() != "time" {
			seen[ft] = true
			out = append(out, jsonTags(ft, seen, skip, false)...)
		}
	}
	return out
}
