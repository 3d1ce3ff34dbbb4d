package attribution

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A large answer (here 400,000 samples, ~9 MB; the cap is 64 MB) is read
// without holding each sample's text: the shipped CronJob and serve
// Deployment run with 512 MiB, and an answer under the cap must fit. The
// allocation is measured, a deterministic proxy for the peak: decoding
// each sample's text (json.RawMessage pairs, the data copied once more)
// allocated 23 times the body, and a 62 MB answer took 690 MB of memory;
// read as decoded, 7 times (260 MB).
func TestPrometheusLargeAnswerAllocation(t *testing.T) {
	const nSeries, nSamples = 200, 2000
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	start := promT0.Unix()
	for i := 0; i < nSeries; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metric":{"target":"sim-a","category":"violence","instance":"%d"},"values":[`, i)
		for j := 0; j < nSamples; j++ {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `[%d,"%d"]`, start+int64(j)*60, j%7)
		}
		b.WriteString(`]}`)
	}
	b.WriteString(`]}}`)
	body := []byte(b.String())
	ps := newPromServer(t, replay(body, 200))
	p := &Prometheus{URL: ps.URL, Query: "blocked", Start: promT0, End: promT0.Add(40 * time.Hour), Step: time.Hour}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	prod, err := p.Load(context.Background(), testTargets)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(prod.Series) != 1 || len(prod.Series[0].Points) != nSamples {
		t.Fatalf("series %d", len(prod.Series))
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("body %d bytes, allocated %d (%.1f×)", len(body), alloc, float64(alloc)/float64(len(body)))
	if alloc > 10*uint64(len(body)) {
		t.Fatalf("reading a %d-byte answer allocated %d bytes (%.1f×): want at most 10×", len(body), alloc, float64(alloc)/float64(len(body)))
	}
}

// parseSample reads what the [unix_time, "value"] decoding read.
func TestParseSample(t *testing.T) {
	for in, want := range map[string]promSample{
		`[1795136400,"12"]`:          {ms: 1795136400000, val: 12, timeOK: true, ok: true},
		` [ 1795136400.5 , "1e3" ] `: {ms: 1795136400500, val: 1000, timeOK: true, ok: true},
		`[1795136400,"\u0031"]`:      {ms: 1795136400000, val: 1, timeOK: true, ok: true},
		`[1795136400,"NaN"]`:         {ms: 1795136400000, timeOK: true},
		`[1795136400,"+Inf"]`:        {ms: 1795136400000, timeOK: true},
		`[1795136400,"-1"]`:          {ms: 1795136400000, timeOK: true},
		`[1795136400,"2e15"]`:        {ms: 1795136400000, timeOK: true},
		`[1795136400,12]`:            {ms: 1795136400000, timeOK: true},
		`[1795136400,"1","2"]`:       {ms: 1795136400000, timeOK: true},
		`[1795136400,"1",2]`:         {ms: 1795136400000, timeOK: true},
		`[1795136400]`:               {},
		`["1795136400","1"]`:         {},
		`[-1,"1"]`:                   {},
		`[1e12,"1"]`:                 {},
		`{"a":1}`:                    {},
		`null`:                       {},
		`[[1,2],"1"]`:                {},
	} {
		if got := parseSample([]byte(in)); got != want {
			t.Errorf("%s: %+v, want %+v", in, got, want)
		}
	}
}
