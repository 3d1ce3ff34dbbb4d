package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// A --pushgateway with a query string or a fragment is refused (exit 2)
// before anything is run, stored or sent: the push client appends its
// grouping path after the whole URL, so the push went to a mangled path
// (PUT /pgw?auth=…/metrics/job/driftprobe/instance/…) and failed after
// the run had paid for the corpus. The error names the flag, not the URL
// (the query may hold a token).
func TestRunPushgatewayQueryRefused(t *testing.T) {
	var hits atomic.Int32
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer gw.Close()
	dir := t.TempDir()
	for _, u := range []string{
		gw.URL + "/pgw?auth=QTOKENqa123",
		strings.Replace(gw.URL, "http://", "http://user:PWqa456@", 1) + "/?token=QTOKENqa123",
		gw.URL + "/?",
		gw.URL + "/#metrics",
	} {
		db := filepath.Join(dir, "x.db")
		out := expectExit(t, 2, "run: --pushgateway: a query string or fragment (?… or #…) is not supported", "run", "--db", db, "--pushgateway", u, "--pushgateway-instance", "i1")
		if strings.Contains(out, "QTOKEN") || strings.Contains(out, "PWqa") {
			t.Errorf("--pushgateway %q: the refusal repeats a credential: %s", u, out)
		}
		if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("--pushgateway %q: the run went ahead (database exists: %v)", u, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests reached the Pushgateway", n)
	}
}
