package dashboards

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// alertmanagerFile is the example Alertmanager configuration for the rules
// in alertsFile.
const alertmanagerFile = "alertmanager/alertmanager.example.yml"

// severityReceivers is the routing policy: the receiver every severity in
// alertsFile must reach. A severity that alertsFile uses and this table
// does not know fails TestAmtoolRoutesEveryAlert: decide its receiver here
// and in the example first.
var severityReceivers = map[string]string{
	"page":    "driftprobe-pager",
	"ticket":  "driftprobe-ticket",
	"warning": "driftprobe-chat",
	"info":    "driftprobe-chat",
}

// fallbackReceiver gets what no driftprobe route claims.
const fallbackReceiver = "fallback"

// inhibition is one inhibit rule of the example: while source fires,
// target is suppressed on the same values of the equal labels.
type inhibition struct {
	source, target string // alert names
	equal          []string
}

// wantInhibitions are the example's inhibit rules, in order. Each is
// proven against a running Alertmanager by TestAlertmanagerInhibition.
var wantInhibitions = []inhibition{
	{source: "DriftprobeBreakerOpen", target: "DriftprobeTargetDegraded", equal: []string{"target"}},
}

// requireAlertmanagerTool finds the first of names on PATH. Missing, it
// skips the test, or fails it when DRIFTPROBE_REQUIRE_AMTOOL is set (CI
// sets it, as it sets DRIFTPROBE_REQUIRE_PROMTOOL for promtool).
func requireAlertmanagerTool(t *testing.T, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv("DRIFTPROBE_REQUIRE_AMTOOL") != "" {
		t.Fatalf("none of %v on PATH and DRIFTPROBE_REQUIRE_AMTOOL is set (apt-get install --no-install-recommends prometheus-alertmanager)", names)
	}
	t.Skipf("none of %v on PATH; set DRIFTPROBE_REQUIRE_AMTOOL=1 to make this a failure", names)
	return ""
}

// amConfig is the part of the Alertmanager configuration the tests read.
type amConfig struct {
	InhibitRules []struct {
		SourceMatchers []string `yaml:"source_matchers"`
		TargetMatchers []string `yaml:"target_matchers"`
		Equal          []string `yaml:"equal"`
	} `yaml:"inhibit_rules"`
}

func loadAlertmanagerConfig(t *testing.T) (amConfig, map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(alertmanagerFile)
	if err != nil {
		t.Fatal(err)
	}
	var c amConfig
	var generic map[string]any
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("%s: %v", alertmanagerFile, err)
	}
	if err := yaml.Unmarshal(raw, &generic); err != nil {
		t.Fatalf("%s: %v", alertmanagerFile, err)
	}
	return c, generic
}

// alertLabelSet is one alert rule of alertsFile as Alertmanager sees it:
// its name and static labels (severity, cause, ...).
type alertLabelSet struct {
	where  string
	labels map[string]string
}

func alertLabelSets(t *testing.T) []alertLabelSet {
	t.Helper()
	var out []alertLabelSet
	for _, g := range loadRules(t).Groups {
		for i, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			ls := map[string]string{"alertname": r.Alert}
			for k, v := range r.Labels {
				ls[k] = v
			}
			out = append(out, alertLabelSet{fmt.Sprintf("%s/%d/%s", g.Name, i, r.Alert), ls})
		}
	}
	if len(out) == 0 {
		t.Fatalf("no alert rules in %s", alertsFile)
	}
	return out
}

func labelArgs(ls map[string]string) []string {
	var out []string
	for _, k := range sortedKeys(ls) {
		out = append(out, k+"="+strconv.Quote(ls[k]))
	}
	return out
}

// TestAlertmanagerExampleNoInlineSecrets: credentials come from *_file
// fields, and the only literal URLs are placeholders that cannot resolve.
func TestAlertmanagerExampleNoInlineSecrets(t *testing.T) {
	_, generic := loadAlertmanagerConfig(t)
	inline := map[string]bool{
		"routing_key": true, "service_key": true, "api_key": true, "api_url": true,
		"credentials": true, "password": true, "bearer_token": true, "auth_token": true,
		"auth_password": true, "auth_secret": true, "token": true, "url_secret": true,
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch c := v.(type) {
		case map[string]any:
			for k, x := range c {
				p := path + "." + k
				if inline[k] {
					t.Errorf("%s: %s is inline; use the matching *_file field", alertmanagerFile, p)
				}
				if k == "url" {
					s, _ := x.(string)
					host := strings.SplitN(strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://"), "/", 2)[0]
					if !strings.HasSuffix(host, ".example.invalid") {
						t.Errorf("%s: %s = %q: a literal URL must be an obvious placeholder (*.example.invalid)", alertmanagerFile, p, s)
					}
				}
				walk(p, x)
			}
		case []any:
			for i, x := range c {
				walk(fmt.Sprintf("%s[%d]", path, i), x)
			}
		}
	}
	walk("", generic)
}

// TestAlertmanagerInhibitRulesKnown: the example's inhibit rules are
// exactly wantInhibitions (so each has a live test), and name alerts that
// exist in alertsFile with labels those alerts carry.
func TestAlertmanagerInhibitRulesKnown(t *testing.T) {
	c, _ := loadAlertmanagerConfig(t)
	exists := map[string]bool{}
	for _, ls := range alertLabelSets(t) {
		exists[ls.labels["alertname"]] = true
	}
	nameRE := regexp.MustCompile(`^alertname="([A-Za-z0-9_]+)"$`)
	var got []inhibition
	for i, r := range c.InhibitRules {
		if len(r.SourceMatchers) != 1 || len(r.TargetMatchers) != 1 {
			t.Errorf("inhibit rule %d: want one alertname matcher on each side, got %v / %v", i, r.SourceMatchers, r.TargetMatchers)
			continue
		}
		src, tgt := nameRE.FindStringSubmatch(r.SourceMatchers[0]), nameRE.FindStringSubmatch(r.TargetMatchers[0])
		if src == nil || tgt == nil {
			t.Errorf("inhibit rule %d: matchers %v / %v must be alertname=\"...\"", i, r.SourceMatchers, r.TargetMatchers)
			continue
		}
		got = append(got, inhibition{src[1], tgt[1], r.Equal})
	}
	if fmt.Sprint(got) != fmt.Sprint(wantInhibitions) {
		t.Errorf("inhibit rules = %v, want %v (add every new rule to wantInhibitions so it is tested live)", got, wantInhibitions)
	}
	for _, in := range got {
		for _, n := range []string{in.source, in.target} {
			if !exists[n] {
				t.Errorf("inhibit rule names alert %s, which is not in %s", n, alertsFile)
			}
		}
		if len(in.equal) == 0 {
			t.Errorf("inhibit rule %s -> %s has no equal labels: it would suppress every target", in.source, in.target)
		}
		for _, l := range in.equal {
			for _, n := range []string{in.source, in.target} {
				if !ruleKeepsLabel(t, n, l) {
					t.Errorf("inhibit rule %s -> %s: equal label %q is not carried by %s", in.source, in.target, l, n)
				}
			}
		}
	}
}

// ruleKeepsLabel reports whether every rule named alert sets label
// statically or keeps it in its expression's first "by (...)" clause (the
// outermost aggregation in these rules).
func ruleKeepsLabel(t *testing.T, alert, label string) bool {
	t.Helper()
	byRE := regexp.MustCompile(`\bby\s*\(([^)]*)\)`)
	found := false
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert != alert {
				continue
			}
			found = true
			if _, ok := r.Labels[label]; ok {
				continue
			}
			m := byRE.FindStringSubmatch(r.Expr)
			if m == nil || !slices.Contains(strings.Fields(strings.ReplaceAll(m[1], ",", " ")), label) {
				return false
			}
		}
	}
	return found
}

func TestAmtoolCheckConfig(t *testing.T) {
	amtool := requireAlertmanagerTool(t, "amtool")
	runTool(t, amtool, "check-config", alertmanagerFile)
}

// TestAmtoolRoutesEveryAlert routes every alert rule of alertsFile, with
// its name and static labels, through the example and requires the
// receiver severityReceivers names for its severity; and routes what no
// driftprobe route should claim to the fallback.
func TestAmtoolRoutesEveryAlert(t *testing.T) {
	amtool := requireAlertmanagerTool(t, "amtool")
	type routeCase struct {
		name   string
		labels map[string]string
		want   string
	}
	var cases []routeCase
	used := map[string]bool{}
	for _, ls := range alertLabelSets(t) {
		sev := ls.labels["severity"]
		used[sev] = true
		want, ok := severityReceivers[sev]
		if !ok {
			t.Errorf("%s: severity %q has no receiver in severityReceivers: decide where it goes (and route it in %s)", ls.where, sev, alertmanagerFile)
			continue
		}
		cases = append(cases, routeCase{ls.where, ls.labels, want})
	}
	for _, sev := range sortedKeys(severityReceivers) {
		if !used[sev] {
			t.Logf("severity %q is in severityReceivers but no rule in %s uses it", sev, alertsFile)
		}
	}
	cases = append(cases,
		routeCase{"unknown-severity", map[string]string{"alertname": "DriftprobeSomethingNew", "severity": "critical"}, fallbackReceiver},
		routeCase{"no-severity", map[string]string{"alertname": "DriftprobeSomethingNew"}, fallbackReceiver},
		routeCase{"not-driftprobe", map[string]string{"alertname": "NodeDown", "severity": "page"}, fallbackReceiver},
		routeCase{"name-only-contains-driftprobe", map[string]string{"alertname": "XDriftprobeRunsStale", "severity": "ticket"}, fallbackReceiver},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"config", "routes", "test", "--config.file=" + alertmanagerFile, "--verify.receivers=" + c.want}, labelArgs(c.labels)...)
			runTool(t, amtool, args...)
		})
	}
}

// syncBuffer collects a child process's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startAlertmanager runs the real Alertmanager with config on a free
// loopback port, clustering off, storage in a temporary directory, and
// returns its base URL once /-/ready answers. It is killed when the test
// ends.
func startAlertmanager(t *testing.T, config string) string {
	t.Helper()
	bin := requireAlertmanagerTool(t, "prometheus-alertmanager", "alertmanager")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	var out syncBuffer
	cmd := exec.Command(bin,
		"--config.file="+config,
		"--storage.path="+t.TempDir(),
		"--web.listen-address="+addr,
		"--cluster.listen-address=",
	)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("alertmanager output:\n%s", out.String())
		}
	})

	base := "http://" + addr
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("alertmanager exited before it was ready: %v\n%s", waitErr, out.String())
		default:
		}
		if resp, err := client.Get(base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("alertmanager not ready on %s within 10s\n%s", addr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// secretsDir is where the example's *_file placeholders point.
const secretsDir = "/etc/alertmanager/secrets/"

// deliveryFreeCopy writes the example to a temporary directory with every
// secrets file path moved into that directory, where none exists: routes
// and inhibit rules are the example's, byte for byte, but no notification
// can be delivered, even on a machine that holds real credentials at the
// placeholder paths (a page's group_wait is 10s). The literal URLs are
// *.example.invalid, which never resolve.
func deliveryFreeCopy(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(alertmanagerFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	n := strings.Count(string(raw), secretsDir)
	if n == 0 {
		t.Fatalf("%s: no %s paths; update deliveryFreeCopy", alertmanagerFile, secretsDir)
	}
	s := strings.ReplaceAll(string(raw), secretsDir, dir+"/absent-secrets/")
	if n := len(regexp.MustCompile(`(?m)^[\s-]*\w+_file:`).FindAllString(s, -1)) - strings.Count(s, "absent-secrets/"); n != 0 {
		t.Fatalf("%s: %d *_file field(s) outside %s; update deliveryFreeCopy", alertmanagerFile, n, secretsDir)
	}
	p := dir + "/alertmanager.yml"
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

type amAlert struct {
	Fingerprint string            `json:"fingerprint"`
	Labels      map[string]string `json:"labels"`
	Status      struct {
		State       string   `json:"state"`
		InhibitedBy []string `json:"inhibitedBy"`
	} `json:"status"`
}

func labelKey(ls map[string]string) string {
	var b strings.Builder
	for _, k := range sortedKeys(ls) {
		fmt.Fprintf(&b, "%s=%q,", k, ls[k])
	}
	return b.String()
}

// TestAlertmanagerInhibition starts the real Alertmanager with the example
// and, for every rule in wantInhibitions, posts the source alert on one
// target together with every alert of alertsFile (real static labels) on
// that target, and the inhibited alert on a second target. It requires
// exactly one suppressed alert: the target alert on the source's target,
// inhibited by the source. Pages, the source itself and the same alert on
// another target stay active.
func TestAlertmanagerInhibition(t *testing.T) {
	base := startAlertmanager(t, deliveryFreeCopy(t))
	sets := alertLabelSets(t)
	client := &http.Client{Timeout: 2 * time.Second}

	for _, in := range wantInhibitions {
		t.Run(in.source+"->"+in.target, func(t *testing.T) {
			// Fresh label values per rule so the alerts of one subtest
			// never meet those of another on the shared Alertmanager.
			mk := func(alertname, value string) map[string]string {
				ls := map[string]string{}
				for _, s := range sets {
					if s.labels["alertname"] == alertname {
						for k, v := range s.labels {
							ls[k] = v
						}
						break
					}
				}
				for _, l := range in.equal {
					ls[l] = value
				}
				ls["alertname"] = alertname
				return ls
			}
			same := strings.ToLower(in.source) + "-same"
			other := strings.ToLower(in.source) + "-other"
			source := mk(in.source, same)
			suppressed := mk(in.target, same)
			var post []map[string]string
			for _, s := range sets {
				ls := map[string]string{}
				for k, v := range s.labels {
					ls[k] = v
				}
				for _, l := range in.equal {
					ls[l] = same
				}
				post = append(post, ls)
			}
			post = append(post, mk(in.target, other))

			now := time.Now().UTC()
			type postAlert struct {
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
				StartsAt    time.Time         `json:"startsAt"`
				EndsAt      time.Time         `json:"endsAt"`
			}
			var body []postAlert
			want := map[string]bool{} // label key -> want suppressed
			for _, ls := range post {
				body = append(body, postAlert{ls, map[string]string{"summary": "test"}, now, now.Add(time.Hour)})
				want[labelKey(ls)] = labelKey(ls) == labelKey(suppressed)
			}
			if _, ok := want[labelKey(source)]; !ok || !want[labelKey(suppressed)] {
				t.Fatalf("test setup: source %v or target %v not among the posted alerts", source, suppressed)
			}
			postAlerts(t, client, base, body)

			// Poll until Alertmanager reports the expected state for every
			// posted alert, or give up at the deadline.
			deadline := time.Now().Add(10 * time.Second)
			var problems []string
			for {
				problems = inhibitionProblems(t, client, base, want, labelKey(source))
				if len(problems) == 0 {
					return
				}
				if time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			sort.Strings(problems)
			t.Errorf("after 10s Alertmanager still disagrees:\n%s", strings.Join(problems, "\n"))
		})
	}
}

// inhibitionProblems compares GET /api/v2/alerts with want (label key ->
// suppressed) and returns what differs; the suppressed alert must name the
// alert with key sourceKey in inhibitedBy.
func inhibitionProblems(t *testing.T, client *http.Client, base string, want map[string]bool, sourceKey string) []string {
	t.Helper()
	resp, err := client.Get(base + "/api/v2/alerts")
	if err != nil {
		return []string{err.Error()}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return []string{"GET /api/v2/alerts: " + resp.Status}
	}
	var alerts []amAlert
	if err := json.NewDecoder(resp.Body).Decode(&alerts); err != nil {
		t.Fatalf("GET /api/v2/alerts: %v", err)
	}
	byKey := map[string]amAlert{}
	for _, a := range alerts {
		byKey[labelKey(a.Labels)] = a
	}
	var problems []string
	sourceFP := byKey[sourceKey].Fingerprint
	for key, sup := range want {
		a, ok := byKey[key]
		switch {
		case !ok:
			problems = append(problems, key+": not listed")
		case sup && (a.Status.State != "suppressed" || sourceFP == "" || !slices.Equal(a.Status.InhibitedBy, []string{sourceFP})):
			problems = append(problems, fmt.Sprintf("%s: state %q inhibitedBy %v, want suppressed by %s (%s)", key, a.Status.State, a.Status.InhibitedBy, sourceFP, sourceKey))
		case !sup && a.Status.State != "active":
			problems = append(problems, fmt.Sprintf("%s: state %q inhibitedBy %v, want active", key, a.Status.State, a.Status.InhibitedBy))
		}
	}
	return problems
}

// postAlerts posts alerts to the Alertmanager API at base (POST
// /api/v2/alerts) and fails the test unless it accepts them.
func postAlerts(t *testing.T, client *http.Client, base string, alerts any) {
	t.Helper()
	raw, err := json.Marshal(alerts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v2/alerts", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/v2/alerts: %s", resp.Status)
	}
}
