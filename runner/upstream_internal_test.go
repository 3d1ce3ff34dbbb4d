package runner

import "testing"

// One upstream, one key, however its base_url is written; different
// servers keep different keys.
func TestUpstreamKeyOneSpellingPerServer(t *testing.T) {
	same := [][]string{
		{"https://api.example.com/v1/chat/completions", "https://API.Example.COM/v1", "https://api.example.com:443/x", "https://api.example.com./v1", "HTTPS://api.example.com"},
		{"http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/other"},
		{"http://localhost/v1", "http://LOCALHOST:80/v1"},
		{"http://[::1]:9000/v1", "http://[::1]:9000"},
		{"https://[2001:DB8::1]/v1", "https://[2001:db8::1]:443/v1"},
	}
	seen := map[string]int{}
	for i, group := range same {
		want := upstreamKey(group[0])
		for _, u := range group[1:] {
			if got := upstreamKey(u); got != want {
				t.Errorf("upstreamKey(%q) = %q, want %q as for %q", u, got, want, group[0])
			}
		}
		if j, ok := seen[want]; ok {
			t.Errorf("groups %d and %d share key %q", j, i, want)
		}
		seen[want] = i
	}
	for _, c := range []struct{ a, b string }{
		{"http://api.example.com", "https://api.example.com"},
		{"https://api.example.com", "https://api.example.com:8443"},
		{"http://localhost:443", "http://localhost"},
	} {
		if upstreamKey(c.a) == upstreamKey(c.b) {
			t.Errorf("%q and %q are different servers, same key %q", c.a, c.b, upstreamKey(c.a))
		}
	}
}
