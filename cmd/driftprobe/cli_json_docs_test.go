package main

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/driftprobe/driftprobe/diff"
	"github.com/driftprobe/driftprobe/internal/app"
)

// docs/CLI.md documents every field `run --json` and `events --json`
// print: each json tag of their structs (and of the structs they nest)
// is named, in backquotes, in the command's own paragraph. A field added
// to the code without a word in the docs fails here.
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
	runDoc := section("**`run --json`**", "**`events --json`**")
	eventsDoc := section("**`events --json`**", "Run ids are")

	// run --json's events are events --json's: documented there.
	skip := map[reflect.Type]bool{reflect.TypeOf(diff.Event{}): true}
	for _, c := range []struct {
		name string
		doc  string
		typ  reflect.Type
	}{
		{"run --json", runDoc, reflect.TypeOf(app.RunJSON{})},
		{"events --json", eventsDoc, reflect.TypeOf(diff.Event{})},
	} {
		tags := jsonTags(c.typ, map[reflect.Type]bool{c.typ: true}, skip, true)
		if len(tags) < 10 {
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
