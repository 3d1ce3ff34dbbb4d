package dashboards

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// The pager receiver resolves an incident when its alerts resolve, and
// says so explicitly (the page route's comment gives the reasons): the
// incident's dedup key is the target's, so an incident kept open would
// swallow every later event on the target.
func TestPagerIncidentsResolveWithTheirAlerts(t *testing.T) {
	var c struct {
		Receivers []struct {
			Name             string `yaml:"name"`
			PagerdutyConfigs []struct {
				SendResolved *bool `yaml:"send_resolved"`
			} `yaml:"pagerduty_configs"`
		} `yaml:"receivers"`
	}
	_, generic := loadAlertmanagerConfig(t)
	raw, _ := yaml.Marshal(generic)
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range c.Receivers {
		if r.Name != severityReceivers["page"] {
			continue
		}
		for _, pd := range r.PagerdutyConfigs {
			found = true
			if pd.SendResolved == nil || !*pd.SendResolved {
				t.Errorf("%s: pagerduty send_resolved must be set, to true: see the page route's comment", r.Name)
			}
		}
	}
	if !found {
		t.Fatalf("no pagerduty config in receiver %s", severityReceivers["page"])
	}
}

// TestAlertmanagerOneIncidentPerEvent starts the real Alertmanager with the
// example and posts what one confirmed event fires on a target (a policy
// change bringing two new categories, and the model change merged into
// it): the pager gets one group for the target, so PagerDuty opens one
// incident, not four. Account-level enforcement on the same target is a
// group of its own (it must never be deduplicated into an open
// incident), and another target's event is another incident.
func TestAlertmanagerOneIncidentPerEvent(t *testing.T) {
	base := startAlertmanager(t, deliveryFreeCopy(t))
	client := &http.Client{Timeout: 2 * time.Second}
	pages := map[string]map[string]string{}
	for _, ls := range alertLabelSets(t) {
		if ls.labels["severity"] == "page" {
			pages[ls.labels["alertname"]] = ls.labels
		}
	}
	mk := func(alertname string, extra ...string) map[string]string {
		ls, ok := pages[alertname]
		if !ok {
			t.Fatalf("%s is not a page in %s", alertname, alertsFile)
		}
		out := map[string]string{}
		for k, v := range ls {
			out[k] = v
		}
		for i := 0; i+1 < len(extra); i += 2 {
			out[extra[i]] = extra[i+1]
		}
		return out
	}
	posted := []map[string]string{
		mk("DriftprobePolicyChange", "target", "sim-a", "direction", "tightened"),
		mk("DriftprobeNewCategoryActive", "target", "sim-a", "category", "hate"),
		mk("DriftprobeNewCategoryActive", "target", "sim-a", "category", "violence"),
		mk("DriftprobeModelChange", "target", "sim-a", "direction", "mixed"),
		mk("DriftprobeAbuseBlock", "target", "sim-a"),
		mk("DriftprobePolicyChange", "target", "sim-b", "direction", "loosened"),
	}
	type postAlert struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
		StartsAt    time.Time         `json:"startsAt"`
		EndsAt      time.Time         `json:"endsAt"`
	}
	now := time.Now().UTC()
	var body []postAlert
	for _, ls := range posted {
		body = append(body, postAlert{ls, map[string]string{"summary": "test"}, now, now.Add(time.Hour)})
	}
	postAlerts(t, client, base, body)

	// group labels -> alert names in it, for the pager receiver.
	want := map[string][]string{
		`target="sim-a"`: {"DriftprobeModelChange", "DriftprobeNewCategoryActive", "DriftprobeNewCategoryActive", "DriftprobePolicyChange"},
		`alertname="DriftprobeAbuseBlock",target="sim-a"`: {"DriftprobeAbuseBlock"},
		`target="sim-b"`: {"DriftprobePolicyChange"},
	}
	deadline := time.Now().Add(10 * time.Second)
	var got map[string][]string
	for {
		got = pagerGroups(t, client, base)
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("pager groups after 10s:\n  %v\nwant\n  %v", got, want)
}

// pagerGroups reads GET /api/v2/alerts/groups: for each group of the
// pager receiver, its labels (sorted k="v" pairs) and its alerts' names.
func pagerGroups(t *testing.T, client *http.Client, base string) map[string][]string {
	t.Helper()
	resp, err := client.Get(base + "/api/v2/alerts/groups")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var groups []struct {
		Labels   map[string]string `json:"labels"`
		Receiver struct {
			Name string `json:"name"`
		} `json:"receiver"`
		Alerts []struct {
			Labels map[string]string `json:"labels"`
		} `json:"alerts"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&groups); err != nil {
		t.Fatalf("GET /api/v2/alerts/groups: %v", err)
	}
	out := map[string][]string{}
	for _, g := range groups {
		if g.Receiver.Name != severityReceivers["page"] || len(g.Alerts) == 0 {
			continue
		}
		var ls []string
		for _, k := range sortedKeys(g.Labels) {
			ls = append(ls, fmt.Sprintf("%s=%q", k, g.Labels[k]))
		}
		key := strings.Join(ls, ",")
		for _, a := range g.Alerts {
			out[key] = append(out[key], a.Labels["alertname"])
		}
		sort.Strings(out[key])
	}
	for k := range out {
		out[k] = slices.Clip(out[k])
	}
	return out
}
