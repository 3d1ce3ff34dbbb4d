package wire

import (
	"encoding/json"
	"testing"
)

func TestLenientBookkeeping(t *testing.T) {
	var v struct {
		A, B, C, D, E Count
		F, G, H, I    Text
		Verdict       string
	}
	body := `{"A":12,"B":"13","C":{"x":1},"D":null,"E":1.5,"F":"id-1","G":5,"H":[1],"I":null,"Verdict":"content_filter"}`
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	want := []any{v.A, Count{12, false}, v.B, Count{13, true}, v.C, Count{0, true}, v.D, Count{}, v.E, Count{0, true},
		v.F, Text{"id-1", false}, v.G, Text{"", true}, v.H, Text{"", true}, v.I, Text{}}
	for i := 0; i < len(want); i += 2 {
		if want[i] != want[i+1] {
			t.Errorf("field %d: got %+v, want %+v", i/2, want[i], want[i+1])
		}
	}
	if v.Verdict != "content_filter" {
		t.Errorf("verdict field lost: %q", v.Verdict)
	}
	if got := OddFields("usage.a", v.A.Odd, "usage.b", v.B.Odd, "id", v.G.Odd); len(got) != 2 || got[0] != "usage.b:bad_type" || got[1] != "id:bad_type" {
		t.Errorf("OddFields = %v", got)
	}
}

func TestLenientScore(t *testing.T) {
	var v struct{ A, B, C, D Score }
	if err := json.Unmarshal([]byte(`{"A":0.25,"B":"0.1","C":null,"D":{"x":1}}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.A != (Score{0.25, true, false}) || v.B != (Score{0, false, true}) || v.C != (Score{}) || v.D != (Score{0, false, true}) {
		t.Errorf("%+v", v)
	}
}
