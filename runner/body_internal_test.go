package runner

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReadBodyMatchesReadAll checks readBody returns exactly what
// io.ReadAll over the same capped reader returns, bytes and error, for
// announced, chunked, over-the-cap and lying (short) bodies.
func TestReadBodyMatchesReadAll(t *testing.T) {
	const limit = 100
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/exact":
			w.Write([]byte(strings.Repeat("a", 40)))
		case "/atcap":
			w.Write([]byte(strings.Repeat("b", limit)))
		case "/over":
			w.Write([]byte(strings.Repeat("c", 3*limit)))
		case "/chunked":
			for i := 0; i < 30; i++ {
				fmt.Fprintf(w, "chunk%02d;", i)
				w.(http.Flusher).Flush()
			}
		case "/empty":
		case "/short":
			// Announces 80 bytes, sends 10, hangs up.
			conn, buf, _ := w.(http.Hijacker).Hijack()
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 80\r\n\r\n0123456789")
			buf.Flush()
			conn.Close()
		}
	}))
	defer srv.Close()
	get := func(path string) *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Close = true
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, path := range []string{"/exact", "/atcap", "/over", "/chunked", "/empty", "/short"} {
		a := get(path)
		got, gotErr := readBody(a, limit)
		a.Body.Close()
		b := get(path)
		want, wantErr := io.ReadAll(io.LimitReader(b.Body, limit+1))
		b.Body.Close()
		if string(got) != string(want) || (gotErr == nil) != (wantErr == nil) || (gotErr != nil && !errors.Is(gotErr, wantErr) && gotErr.Error() != wantErr.Error()) {
			t.Errorf("%s: readBody = %q, %v; io.ReadAll = %q, %v", path, got, gotErr, want, wantErr)
		}
		if path == "/short" && gotErr == nil {
			t.Errorf("%s: a body shorter than announced must be an error", path)
		}
	}
}
