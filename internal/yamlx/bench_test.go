package yamlx

import (
	"fmt"
	"strings"
	"testing"
)

// manyAliased returns a document whose anchored list (items entries, one
// unknown key each) is aliased aliases times: items×(aliases+1) problems,
// each located through the replay.
func manyAliased(items, aliases int) string {
	var b strings.Builder
	b.WriteString("list:\n  - name: a\n    list: &l\n      - &p {name: p, bogus: 1}\n")
	for range items - 1 {
		b.WriteString("      - *p\n")
	}
	for i := range aliases {
		fmt.Fprintf(&b, "  - {name: n%d, list: *l}\n", i)
	}
	return b.String()
}

func BenchmarkDecodeManyAliasedProblems(b *testing.B) {
	data := []byte(manyAliased(100, 120))
	b.ReportAllocs()
	for b.Loop() {
		var v scalars
		if _, err := Decode("f.yaml", data, &v); err == nil {
			b.Fatal("no error")
		}
	}
}
