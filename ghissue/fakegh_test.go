package ghissue_test

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeGitHub is an in-memory GitHub REST API speaking what go-github v60
// calls for issues, served on loopback under the GHES prefix /api/v3.
type fakeGitHub struct {
	t       testing.TB
	srv     *httptest.Server
	owner   string
	repo    string
	token   string
	perPage int // server-side page size cap (forces Link pagination)

	mu       sync.Mutex
	issues   []*fakeIssue // number = index + 1
	comments map[int][]*fakeComment
	nextCID  int64
	reqs     []fakeReq
	faults   []fault  // consumed in order by matching requests
	app      *fakeApp // GitHub App installation auth, when enabled
	// dropLabels makes creation ignore the labels asked for, as GitHub
	// does for a caller without push access.
	dropLabels bool
	// now stamps created_at/updated_at (default time.Now; tests inject
	// their clock).
	now func() time.Time
	// omitLocked leaves the locked field out of issues (a proxy or an
	// older GitHub Enterprise that does not send it).
	omitLocked bool
	// login is the user the API's callers create issues and comments as
	// (default fakeBot; fakeAppBot once enableApp is called).
	login string
	// issuesOff: a maintainer disabled Issues in the repository's
	// settings. GitHub then answers every issue and comment call with
	// 410 "Issues are disabled for this repo", and the repository's
	// has_issues is false; the issues are kept, and come back when
	// Issues is enabled again.
	issuesOff bool
	// formerName, when set, is a name the repository had before it was
	// renamed: GitHub redirects its API paths to the repository's
	// (301 for GET and HEAD, 307 for the other methods, which the client
	// repeats with the same method and body).
	formerName string
	// moved maps the number of an issue a person transferred away to the
	// number it has where it went (here: another issue of the fake).
	// GitHub answers every call about it (the issue, its comments, an
	// edit) with 301 Moved Permanently to its new address.
	moved map[int]int
}

// The logins driftprobe posts as in these tests.
const (
	fakeBot    = "driftprobe-bot"
	fakeAppBot = "driftprobe-app[bot]"
)

// fakeApp is one GitHub App installation: POST
// /app/installations/{id}/access_tokens checks the app's RS256 JWT and
// hands out token, which then authorizes the REST calls.
type fakeApp struct {
	id, installation int64
	pub              *rsa.PublicKey
	token            string
	issued           int      // installation tokens handed out
	rejected         []string // why JWTs were refused
	// rotate hands out a new token (token_N) on every request, valid for
	// 30s, so ghinstallation refreshes it before every call.
	rotate  bool
	current string // the token that authorizes now
}

type fakeIssue struct {
	Number      int      `json:"number"`
	Title       string   `json:"title"`
	Body        string   `json:"body"`
	State       string   `json:"state"`
	StateReason string   `json:"state_reason,omitempty"`
	Labels      []string `json:"-"`
	// CreatedAt and UpdatedAt are GitHub's timestamps (zero for issues a
	// test put in place: created long ago).
	CreatedAt, UpdatedAt time.Time `json:"-"`
	// Author is the user who opened it ("" for none).
	Author string `json:"-"`
	// Locked: a maintainer locked the conversation; LockReason is its
	// active_lock_reason. GitHub then refuses comments from callers
	// without write access (the fake's callers never have it).
	Locked     bool   `json:"-"`
	LockReason string `json:"-"`
}

type fakeComment struct {
	ID   int64     `json:"id"`
	Body string    `json:"body"`
	User *fakeUser `json:"user,omitempty"`
}

type fakeUser struct {
	Login string `json:"login"`
}

type fakeReq struct {
	Method, Path, Query, Auth string
	Body                      string
	Status                    int
}

// fault scripts one response. match selects the request (nil: any);
// after=true processes the request first and then answers with the fault
// (the "created, but the answer was lost" case). bodyFn, when set, builds
// the body from the requests seen so far (this one included).
type fault struct {
	match  func(r *http.Request) bool
	after  bool
	status int
	header map[string]string
	body   string
	bodyFn func(reqs []fakeReq) string
	// notGitHub: something on the way answers in GitHub's place (an
	// egress proxy, a load balancer): its own HTML page, none of GitHub's
	// headers (no X-GitHub-Request-Id).
	notGitHub bool
}

func newFakeGitHub(t testing.TB, owner, repo, token string) *fakeGitHub {
	f := &fakeGitHub{t: t, owner: owner, repo: repo, token: token, perPage: 2, comments: map[int][]*fakeComment{}, nextCID: 1000, login: fakeBot}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// enableApp makes the server a GitHub App installation (token auth keeps
// working only when f.token is set).
func (f *fakeGitHub) enableApp(appID, installationID int64, pub *rsa.PublicKey, token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.app = &fakeApp{id: appID, installation: installationID, pub: pub, token: token}
	f.login = fakeAppBot
}

func (f *fakeGitHub) appState() fakeApp {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := *f.app
	a.rejected = append([]string(nil), f.app.rejected...)
	return a
}

// BaseURL is what github.base_url points at.
func (f *fakeGitHub) BaseURL() string { return f.srv.URL + "/" }

func (f *fakeGitHub) addFault(ft fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, ft)
}

func (f *fakeGitHub) requests() []fakeReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeReq(nil), f.reqs...)
}

func (f *fakeGitHub) issueList() []fakeIssue {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeIssue
	for _, i := range f.issues {
		out = append(out, *i)
	}
	return out
}

func (f *fakeGitHub) commentsOf(n int) []fakeComment {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeComment
	for _, c := range f.comments[n] {
		out = append(out, *c)
	}
	return out
}

func (f *fakeGitHub) issueJSON(i *fakeIssue) map[string]any {
	labels := []map[string]any{}
	for _, l := range i.Labels {
		labels = append(labels, map[string]any{"name": l})
	}
	m := map[string]any{
		"number": i.Number, "title": i.Title, "body": i.Body, "state": i.State, "labels": labels,
		// As a GitHub Enterprise server answers: its API at
		// /api/v3/, its web pages (html_url) on the same host.
		"html_url": fmt.Sprintf("%s/%s/%s/issues/%d", f.srv.URL, f.owner, f.repo, i.Number),
		"url":      fmt.Sprintf("%s/api/v3/repos/%s/%s/issues/%d", f.srv.URL, f.owner, f.repo, i.Number),
	}
	if i.StateReason != "" {
		m["state_reason"] = i.StateReason
	}
	if i.Author != "" {
		m["user"] = map[string]any{"login": i.Author}
	}
	if !f.omitLocked {
		m["locked"] = i.Locked
	}
	if i.LockReason != "" {
		m["active_lock_reason"] = i.LockReason
	}
	m["created_at"] = i.CreatedAt.UTC().Format(time.RFC3339)
	m["updated_at"] = i.UpdatedAt.UTC().Format(time.RFC3339)
	return m
}

// clock is the server's time.
func (f *fakeGitHub) clock() time.Time {
	if f.now != nil {
		return f.now().UTC()
	}
	return time.Now().UTC()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

var (
	issuesRe    = regexp.MustCompile(`^/api/v3/repos/([^/]+)/([^/]+)/issues$`)
	issueRe     = regexp.MustCompile(`^/api/v3/repos/([^/]+)/([^/]+)/issues/(\d+)$`)
	commentsRe  = regexp.MustCompile(`^/api/v3/repos/([^/]+)/([^/]+)/issues/(\d+)/comments$`)
	repoRe      = regexp.MustCompile(`^/api/v3/repos/([^/]+)/([^/]+)$`)
	issuePathRe = regexp.MustCompile(`^/api/v3/repos/[^/]+/[^/]+/issues/(\d+)(/comments)?$`)
	tokensRe    = regexp.MustCompile(`^/api/v3/app/installations/(\d+)/access_tokens$`)
)

// statusRecorder captures the status the handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(c int) { s.status = c; s.ResponseWriter.WriteHeader(c) }

func (f *fakeGitHub) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	rec := fakeReq{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Auth: r.Header.Get("Authorization"), Body: string(body)}
	var ft *fault
	for i := range f.faults {
		if f.faults[i].match == nil || f.faults[i].match(r) {
			x := f.faults[i]
			ft = &x
			f.faults = append(f.faults[:i], f.faults[i+1:]...)
			break
		}
	}
	if ft != nil && ft.bodyFn != nil {
		ft.body = ft.bodyFn(append(append([]fakeReq(nil), f.reqs...), rec))
	}
	if old := "/api/v3/repos/" + f.owner + "/" + f.formerName; ft == nil && f.formerName != "" && (r.URL.Path == old || strings.HasPrefix(r.URL.Path, old+"/")) {
		code := http.StatusTemporaryRedirect
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			code = http.StatusMovedPermanently
		}
		u := *r.URL
		u.Path = "/api/v3/repos/" + f.owner + "/" + f.repo + strings.TrimPrefix(r.URL.Path, old)
		rec.Status = code
		f.reqs = append(f.reqs, rec)
		w.Header().Set("X-GitHub-Request-Id", "0D3A:REDIRECT")
		w.Header().Set("Location", f.srv.URL+u.RequestURI())
		writeJSON(w, code, map[string]any{"message": "Moved Permanently", "url": f.srv.URL + u.RequestURI()})
		return
	}
	if m := issuePathRe.FindStringSubmatch(r.URL.Path); ft == nil && m != nil {
		n, _ := strconv.Atoi(m[1])
		if to, ok := f.moved[n]; ok {
			u := *r.URL
			u.Path = fmt.Sprintf("/api/v3/repos/%s/%s/issues/%d%s", f.owner, f.repo, to, m[2])
			rec.Status = http.StatusMovedPermanently
			f.reqs = append(f.reqs, rec)
			w.Header().Set("X-GitHub-Request-Id", "0D3A:MOVED")
			w.Header().Set("Location", f.srv.URL+u.RequestURI())
			writeJSON(w, http.StatusMovedPermanently, map[string]any{"message": "Moved Permanently", "url": f.srv.URL + u.RequestURI()})
			return
		}
	}
	if ft == nil || !ft.notGitHub {
		// Every answer of GitHub's API carries its request id, errors
		// and 5xx included (its format: hex fields and colons).
		w.Header().Set("X-GitHub-Request-Id", fmt.Sprintf("0D3A:%X:%X:%X:6650A1B2", len(f.reqs)+1, 0x1BCC6E+len(f.reqs), 0xB442C))
	}
	if ft != nil && ft.notGitHub {
		rec.Status = ft.status
		f.reqs = append(f.reqs, rec)
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Server", "proxy")
		w.WriteHeader(ft.status)
		_, _ = io.WriteString(w, ft.body)
		return
	}
	if ft != nil && !ft.after {
		rec.Status = ft.status
		f.reqs = append(f.reqs, rec)
		for k, v := range ft.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(ft.status)
		_, _ = io.WriteString(w, ft.body)
		return
	}
	sr := &statusRecorder{ResponseWriter: httptest.NewRecorder(), status: 200}
	f.handle(sr, r, body)
	if ft != nil { // processed, but the client sees the fault
		rec.Status = ft.status
		f.reqs = append(f.reqs, rec)
		for k, v := range ft.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(ft.status)
		_, _ = io.WriteString(w, ft.body)
		return
	}
	rec.Status = sr.status
	f.reqs = append(f.reqs, rec)
	res := sr.ResponseWriter.(*httptest.ResponseRecorder)
	for k, v := range res.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(sr.status)
	_, _ = w.Write(res.Body.Bytes())
}

func (f *fakeGitHub) notFound(w http.ResponseWriter) {
	writeJSON(w, 404, map[string]any{"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})
}

// authorized accepts the configured token, or the app installation's
// token as GitHub does ("token X" or "Bearer X").
func (f *fakeGitHub) authorized(h string) bool {
	if f.token != "" && h == "Bearer "+f.token {
		return true
	}
	return f.app != nil && f.app.current != "" && (h == "token "+f.app.current || h == "Bearer "+f.app.current)
}

// verifyJWT checks what GitHub checks of an app's JWT: RS256, signed by
// the app's key, iss = the app id, iat not in the future (60s skew),
// exp after now and at most 10 minutes ahead.
func verifyJWT(tok string, pub *rsa.PublicKey, appID int64) error {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return fmt.Errorf("not a JWT: %d parts", len(parts))
	}
	var hdr struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
	}
	var claims struct {
		Iss any   `json:"iss"`
		Iat int64 `json:"iat"`
		Exp int64 `json:"exp"`
	}
	for i, v := range []any{&hdr, &claims} {
		raw, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			return fmt.Errorf("part %d: %v", i, err)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			return fmt.Errorf("part %d: %v", i, err)
		}
	}
	if hdr.Alg != "RS256" {
		return fmt.Errorf("alg %q, want RS256", hdr.Alg)
	}
	if fmt.Sprint(claims.Iss) != strconv.FormatInt(appID, 10) {
		return fmt.Errorf("iss %v, want %d", claims.Iss, appID)
	}
	now := time.Now().Unix()
	if claims.Iat > now+60 || claims.Exp <= now || claims.Exp > now+600 {
		return fmt.Errorf("iat %d exp %d outside GitHub's window (now %d)", claims.Iat, claims.Exp, now)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return fmt.Errorf("signature: %v", err)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig); err != nil {
		return fmt.Errorf("signature: %v", err)
	}
	return nil
}

// accessToken serves POST /app/installations/{id}/access_tokens.
func (f *fakeGitHub) accessToken(w http.ResponseWriter, r *http.Request, id string) {
	jwt, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if f.app == nil || !ok {
		writeJSON(w, 401, map[string]any{"message": "A JSON web token could not be decoded", "documentation_url": "https://docs.github.com/rest"})
		return
	}
	if err := verifyJWT(jwt, f.app.pub, f.app.id); err != nil {
		f.app.rejected = append(f.app.rejected, err.Error())
		writeJSON(w, 401, map[string]any{"message": "A JSON web token could not be decoded", "documentation_url": "https://docs.github.com/rest"})
		return
	}
	if id != strconv.FormatInt(f.app.installation, 10) {
		f.notFound(w)
		return
	}
	f.app.issued++
	ttl := time.Hour
	f.app.current = f.app.token
	if f.app.rotate {
		f.app.current, ttl = fmt.Sprintf("%s_%d", f.app.token, f.app.issued), 30*time.Second
	}
	writeJSON(w, 201, map[string]any{
		"token":                f.app.current,
		"expires_at":           time.Now().Add(ttl).UTC().Format(time.RFC3339),
		"permissions":          map[string]string{"issues": "write", "metadata": "read"},
		"repository_selection": "selected",
	})
}

func (f *fakeGitHub) handle(w http.ResponseWriter, r *http.Request, body []byte) {
	if m := tokensRe.FindStringSubmatch(r.URL.Path); m != nil && r.Method == http.MethodPost {
		f.accessToken(w, r, m[1])
		return
	}
	if r.URL.Path == "/api/v3/app" && r.Method == http.MethodGet {
		// The authenticated app (JWT): its slug names its bot user.
		jwt, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if f.app == nil || !ok || verifyJWT(jwt, f.app.pub, f.app.id) != nil {
			writeJSON(w, 401, map[string]any{"message": "A JSON web token could not be decoded"})
			return
		}
		writeJSON(w, 200, map[string]any{"id": f.app.id, "slug": strings.TrimSuffix(fakeAppBot, "[bot]")})
		return
	}
	if !f.authorized(r.Header.Get("Authorization")) {
		writeJSON(w, 401, map[string]any{"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"})
		return
	}
	path := r.URL.Path
	var m []string
	repoOK := func(m []string) bool { return m[1] == f.owner && m[2] == f.repo }
	if f.issuesOff && strings.HasPrefix(path, "/api/v3/repos/"+f.owner+"/"+f.repo+"/issues") {
		writeJSON(w, 410, map[string]any{"message": "Issues are disabled for this repo", "documentation_url": "https://docs.github.com/v3/issues/"})
		return
	}
	switch {
	case path == "/api/v3/user" && r.Method == http.MethodGet:
		if f.app != nil && f.app.current != "" && strings.HasSuffix(r.Header.Get("Authorization"), f.app.current) {
			// An installation token has no user, as on GitHub.
			writeJSON(w, 403, map[string]any{"message": "Resource not accessible by integration"})
			return
		}
		writeJSON(w, 200, map[string]any{"login": f.login})
	case (func() bool { m = issuesRe.FindStringSubmatch(path); return m != nil })():
		if !repoOK(m) {
			f.notFound(w)
			return
		}
		switch r.Method {
		case http.MethodPost:
			var req struct {
				Title  string   `json:"title"`
				Body   string   `json:"body"`
				Labels []string `json:"labels"`
			}
			if err := json.Unmarshal(body, &req); err != nil || req.Title == "" {
				writeJSON(w, 422, map[string]any{"message": "Validation Failed"})
				return
			}
			if len(req.Body) > 65536 || len([]rune(req.Title)) > 256 {
				writeJSON(w, 422, map[string]any{"message": "Validation Failed", "errors": []map[string]any{{"resource": "Issue", "code": "custom", "field": "body", "message": "body is too long (maximum is 65536 characters)"}}})
				return
			}
			labels := req.Labels
			if f.dropLabels {
				labels = nil
			}
			now := f.clock()
			iss := &fakeIssue{Number: len(f.issues) + 1, Title: req.Title, Body: req.Body, State: "open", Labels: labels, CreatedAt: now, UpdatedAt: now, Author: f.login}
			f.issues = append(f.issues, iss)
			writeJSON(w, 201, f.issueJSON(iss))
		case http.MethodGet:
			q := r.URL.Query()
			state := q.Get("state")
			if state == "" {
				state = "open"
			}
			var since time.Time
			if v := q.Get("since"); v != "" {
				var err error
				if since, err = time.Parse(time.RFC3339, v); err != nil {
					writeJSON(w, 422, map[string]any{"message": "Validation Failed: since " + v})
					return
				}
			}
			var sel []*fakeIssue
			for _, i := range f.issues {
				if f.elsewhere(i.Number) {
					continue // transferred away: listed in another repository
				}
				if state != "all" && i.State != state {
					continue
				}
				if i.UpdatedAt.Before(since) {
					continue
				}
				if lbl := q.Get("labels"); lbl != "" {
					has := false
					for _, l := range i.Labels {
						if l == lbl {
							has = true
						}
					}
					if !has {
						continue
					}
				}
				sel = append(sel, i)
			}
			// sort=created|updated (default created), direction=desc|asc
			// (default desc): newest first, as GitHub sorts by default.
			key := func(i *fakeIssue) time.Time { return i.CreatedAt }
			if q.Get("sort") == "updated" {
				key = func(i *fakeIssue) time.Time { return i.UpdatedAt }
			}
			asc := q.Get("direction") == "asc"
			sort.SliceStable(sel, func(a, b int) bool {
				ka, kb := key(sel[a]), key(sel[b])
				if !ka.Equal(kb) {
					return ka.Before(kb) == asc
				}
				return (sel[a].Number < sel[b].Number) == asc
			})
			page, items := f.paginate(w, r, len(sel))
			out := []map[string]any{}
			for _, i := range sel[items[0]:items[1]] {
				out = append(out, f.issueJSON(i))
			}
			_ = page
			writeJSON(w, 200, out)
		default:
			writeJSON(w, 405, map[string]any{"message": "Method Not Allowed"})
		}
	case (func() bool { m = commentsRe.FindStringSubmatch(path); return m != nil })():
		n, _ := strconv.Atoi(m[3])
		if !repoOK(m) || n < 1 || n > len(f.issues) {
			f.notFound(w)
			return
		}
		switch r.Method {
		case http.MethodPost:
			var req struct {
				Body string `json:"body"`
			}
			if err := json.Unmarshal(body, &req); err != nil || req.Body == "" || len(req.Body) > 65536 {
				writeJSON(w, 422, map[string]any{"message": "Validation Failed"})
				return
			}
			if f.issues[n-1].Locked {
				// GitHub's answer to a caller without write access.
				writeJSON(w, 403, map[string]any{"message": "Unable to create comment because issue is locked.", "documentation_url": "https://docs.github.com/articles/locking-conversations/"})
				return
			}
			f.nextCID++
			c := &fakeComment{ID: f.nextCID, Body: req.Body, User: &fakeUser{Login: f.login}}
			f.comments[n] = append(f.comments[n], c)
			f.issues[n-1].UpdatedAt = f.clock()
			writeJSON(w, 201, c)
		case http.MethodGet:
			cs := f.comments[n]
			_, items := f.paginate(w, r, len(cs))
			out := []*fakeComment{}
			out = append(out, cs[items[0]:items[1]]...)
			writeJSON(w, 200, out)
		default:
			writeJSON(w, 405, map[string]any{"message": "Method Not Allowed"})
		}
	case (func() bool { m = issueRe.FindStringSubmatch(path); return m != nil })():
		n, _ := strconv.Atoi(m[3])
		if !repoOK(m) || n < 1 || n > len(f.issues) {
			f.notFound(w)
			return
		}
		iss := f.issues[n-1]
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, 200, f.issueJSON(iss))
		case http.MethodPatch:
			var req struct {
				State       *string   `json:"state"`
				StateReason *string   `json:"state_reason"`
				Title       *string   `json:"title"`
				Body        *string   `json:"body"`
				Labels      *[]string `json:"labels"`
			}
			if err := json.Unmarshal(body, &req); err != nil {
				writeJSON(w, 422, map[string]any{"message": "Validation Failed"})
				return
			}
			if req.State != nil {
				iss.State = *req.State
			}
			if req.StateReason != nil {
				iss.StateReason = *req.StateReason
			}
			if req.Title != nil {
				iss.Title = *req.Title
			}
			if req.Body != nil {
				iss.Body = *req.Body
			}
			if req.Labels != nil && !f.dropLabels {
				// Replaces every label; dropped, as on create, for a
				// caller without push access.
				iss.Labels = append([]string(nil), (*req.Labels)...)
			}
			iss.UpdatedAt = f.clock()
			writeJSON(w, 200, f.issueJSON(iss))
		default:
			writeJSON(w, 405, map[string]any{"message": "Method Not Allowed"})
		}
	case (func() bool { m = repoRe.FindStringSubmatch(path); return m != nil })():
		if !repoOK(m) {
			f.notFound(w)
			return
		}
		writeJSON(w, 200, map[string]any{"id": 1, "name": f.repo, "full_name": f.owner + "/" + f.repo, "has_issues": !f.issuesOff})
	default:
		f.notFound(w)
	}
}

// paginate picks the page's item range and writes GitHub's Link header.
func (f *fakeGitHub) paginate(w http.ResponseWriter, r *http.Request, n int) (int, [2]int) {
	q := r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 || per > 100 {
		per = 30
	}
	if f.perPage > 0 && per > f.perPage {
		per = f.perPage
	}
	page, _ := strconv.Atoi(q.Get("page"))
	if page < 1 {
		page = 1
	}
	last := (n + per - 1) / per
	if last < 1 {
		last = 1
	}
	link := func(p int, rel string) string {
		q2 := url.Values{}
		for k, v := range q {
			q2[k] = v
		}
		q2.Set("page", strconv.Itoa(p))
		q2.Set("per_page", strconv.Itoa(per))
		return fmt.Sprintf(`<%s%s?%s>; rel="%s"`, f.srv.URL, r.URL.Path, q2.Encode(), rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"), link(page-1, "prev"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	lo := min((page-1)*per, n)
	hi := min(lo+per, n)
	return page, [2]int{lo, hi}
}

// GitHub's real rate-limit responses.
func primaryRateLimit(reset time.Time) fault {
	return fault{status: 403, header: map[string]string{
		"X-Ratelimit-Limit":     "5000",
		"X-Ratelimit-Remaining": "0",
		"X-Ratelimit-Used":      "5000",
		"X-Ratelimit-Reset":     strconv.FormatInt(reset.Unix(), 10),
		"X-Ratelimit-Resource":  "core",
	}, body: `{"message":"API rate limit exceeded for user ID 12345. If you reach out to GitHub Support for help, please include the request ID 0000:1111:2222:3333.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}`}
}

func secondaryRateLimit(status int, retryAfter int) fault {
	return fault{status: status, header: map[string]string{
		"Retry-After":           strconv.Itoa(retryAfter),
		"X-Ratelimit-Limit":     "5000",
		"X-Ratelimit-Remaining": "4990",
		"X-Ratelimit-Resource":  "core",
	}, body: `{"message":"You have exceeded a secondary rate limit and have been temporarily blocked from content creation. Please retry your request again later. If you reach out to GitHub Support for help, please include the request ID 0000:1111:2222:3333.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`}
}

// outage is GitHub failing: its 5xx answer (with its request id, as
// every answer of GitHub's).
func outage(status int) fault {
	return fault{status: status, body: `{"message":"Server Error"}`}
}

// proxyError is a 5xx that did not come from GitHub: an egress proxy or a
// load balancer on the way answers with its own page, without GitHub's
// request id (or any of its headers).
func proxyError(status int) fault {
	return fault{status: status, notGitHub: true, body: fmt.Sprintf("<html><head><title>%d %s</title></head><body><center><h1>%d %s</h1></center><hr><center>proxy</center></body></html>\n",
		status, http.StatusText(status), status, http.StatusText(status))}
}

// timeoutTransport fails scripted requests with a network timeout, without
// waiting: before sending, or after the server processed the request (the
// answer was lost).
type timeoutTransport struct {
	mu    sync.Mutex
	next  []bool // queue: true = lose the answer after sending
	inner http.RoundTripper
}

type netTimeout struct{}

func (netTimeout) Error() string   { return "i/o timeout" }
func (netTimeout) Timeout() bool   { return true }
func (netTimeout) Temporary() bool { return true }

var _ net.Error = netTimeout{}

func (t *timeoutTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == "/api/v3/user" || r.URL.Path == "/api/v3/app" {
		// Asking who posts is no delivery call: the queue is for those.
		return t.inner.RoundTrip(r)
	}
	t.mu.Lock()
	var lose, fail bool
	if len(t.next) > 0 {
		fail, lose = true, t.next[0]
		t.next = t.next[1:]
	}
	t.mu.Unlock()
	if !fail {
		return t.inner.RoundTrip(r)
	}
	if lose {
		resp, err := t.inner.RoundTrip(r)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	return nil, &net.OpError{Op: "read", Net: "tcp", Err: netTimeout{}}
}

// hookTransport runs before on every request (the test's stand-in for
// what happens while a call is in flight: a slow answer advancing the
// injected clock, another process delivering); a non-nil error fails the
// request without sending it.
type hookTransport struct {
	inner  http.RoundTripper
	before func(r *http.Request) error
}

func (t *hookTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := t.before(r); err != nil {
		return nil, err
	}
	return t.inner.RoundTrip(r)
}

// isCreate reports whether r opens an issue.
func isCreate(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/issues")
}

// elsewhere reports whether issue n is not this repository's listing's:
// transferred away, or where one was transferred to (another repository,
// which the fake serves under the same path).
func (f *fakeGitHub) elsewhere(n int) bool {
	for from, to := range f.moved {
		if n == from || n == to {
			return true
		}
	}
	return false
}

// transfer moves issue n away, as a person transferring it to another
// repository: its copy (same body, labels and comments) answers at a new
// number, and every call about n is answered 301 to it. It returns the new
// number.
func (f *fakeGitHub) transfer(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.issues[n-1]
	cp := *old
	cp.Number = len(f.issues) + 1
	f.issues = append(f.issues, &cp)
	f.comments[cp.Number] = f.comments[n]
	if f.moved == nil {
		f.moved = map[int]int{}
	}
	f.moved[n] = cp.Number
	return cp.Number
}
