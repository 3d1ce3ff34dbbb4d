package oaiwire

import (
	"errors"
	"testing"
)

// CheckBaseURL accepts an absolute http(s) URL with a host and, when a port
// is given, one from 1 to 65535; it refuses everything else with
// ErrBaseURL, which never repeats the URL.
func TestCheckBaseURL(t *testing.T) {
	for _, ok := range []string{
		"https://api.openai.com/v1", "http://127.0.0.1:8000/v1", "http://vllm:1/", "https://x:65535", "http://[::1]:8080/v1",
	} {
		if err := CheckBaseURL(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{
		"", "api.openai.com", "ftp://x", "http://", "http://:8080/v1", "https://u:p@x",
		"https://x/?key=1", "http://x/v1?", "https://x/#f", "http://x/#",
		"http://127.0.0.1:99999/v1", "http://127.0.0.1:0/v1", "https://x:65536", "http://[::1]:70000/",
	} {
		if err := CheckBaseURL(bad); !errors.Is(err, ErrBaseURL) {
			t.Errorf("%q: %v, want ErrBaseURL", bad, err)
		}
	}
}
