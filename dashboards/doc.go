// Package dashboards holds driftprobe's operational artefacts, which are
// data rather than Go code: the Grafana dashboard (grafana/driftprobe.json)
// and its provisioning files, the Prometheus alert rules
// (prometheus/alerts.yml) with their promtool unit tests, an example
// Alertmanager configuration routing them by severity
// (alertmanager/alertmanager.example.yml), and, from the
// repository root, the Kubernetes and systemd deployment examples in
// deploy/. Its tests keep all of them honest: every PromQL expression may
// only use metric names from package metrics, the dashboard must work with
// file provisioning, the alert rules must pass promtool, every rule must
// route where its severity says (amtool, and a live Alertmanager for the
// inhibit rule), and the manifests
// must keep the properties the runbook relies on.
package dashboards
