package dashboards

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"github.com/driftprobe/driftprobe/config"
	"github.com/driftprobe/driftprobe/internal/app"
	"github.com/driftprobe/driftprobe/probes"
	_ "github.com/driftprobe/driftprobe/probes/all" // providers, for config validation
	"github.com/driftprobe/driftprobe/storage"
)

const (
	k8sDir     = "../deploy/k8s"
	systemdDir = "../deploy/systemd"

	configPath = "/etc/driftprobe/config.yaml"
	dbPath     = "/var/lib/driftprobe/driftprobe.db"
	dataDir    = "/var/lib/driftprobe"
	configDir  = "/etc/driftprobe"
	servePort  = 9464
	secretName = "driftprobe-secrets"
	pvcName    = "driftprobe-data"
	configMap  = "driftprobe-config"
)

// doc is one YAML document of a manifest file.
type doc struct {
	file string
	m    map[string]any
}

func (d doc) kind() string { s, _ := d.m["kind"].(string); return s }
func (d doc) name() string { s, _ := get(d.m, "metadata", "name").(string); return s }

// get walks nested maps by key and lists by index ("0").
func get(v any, path ...string) any {
	for _, p := range path {
		switch c := v.(type) {
		case map[string]any:
			v = c[p]
		case []any:
			var i int
			if _, err := fmt.Sscan(p, &i); err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

func loadManifests(t *testing.T) []doc {
	t.Helper()
	var docs []doc
	err := filepath.WalkDir(k8sDir, func(path string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		dec := yaml.NewDecoder(f)
		for {
			var m map[string]any
			err := dec.Decode(&m)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if m == nil {
				continue
			}
			if m["apiVersion"] == nil || m["kind"] == nil {
				return fmt.Errorf("%s: a document without apiVersion or kind", path)
			}
			docs = append(docs, doc{path, m})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func find(t *testing.T, docs []doc, kind string) doc {
	t.Helper()
	var found []doc
	for _, d := range docs {
		if d.kind() == kind {
			found = append(found, d)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one %s under %s, found %d", kind, k8sDir, len(found))
	}
	return found[0]
}

func wantEq(t *testing.T, where string, got, want any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s = %v, want %v", where, got, want)
	}
}

// loadK8sConfig parses the ConfigMap's config.yaml strictly and validates
// it against the providers linked into this build.
func loadK8sConfig(t *testing.T, docs []doc) *config.Config {
	t.Helper()
	cm := find(t, docs, "ConfigMap")
	wantEq(t, "ConfigMap name", cm.name(), configMap)
	data, _ := get(cm.m, "data", "config.yaml").(string)
	if data == "" {
		t.Fatal("ConfigMap has no data.config.yaml")
	}
	c, err := config.Parse(cm.file+":config.yaml", []byte(data))
	if err != nil {
		t.Fatalf("config.yaml in the ConfigMap: %v", err)
	}
	all := c.Targets
	c.Targets = nil
	for _, tg := range all {
		if _, ok := probes.Lookup(tg.Provider); ok {
			c.Targets = append(c.Targets, tg)
		} else {
			t.Logf("target %s: provider %q not linked into this build; not validated", tg.Name, tg.Provider)
		}
	}
	if len(c.Targets) > 0 {
		if err := c.Validate(false); err != nil {
			t.Errorf("config.yaml in the ConfigMap: %v", err)
		}
	}
	c.Targets = all
	return c
}

// scheduleInterval is the interval of the config's schedule: "@every D",
// or a cron schedule's first gap from a fixed day.
func scheduleInterval(t *testing.T, c *config.Config) time.Duration {
	t.Helper()
	if rest, ok := strings.CutPrefix(c.Schedule, "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	cs, err := cron.ParseStandard(c.Schedule)
	if err != nil {
		t.Fatalf("config schedule %q: %v", c.Schedule, err)
	}
	n1 := cs.Next(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	return cs.Next(n1).Sub(n1)
}

// secretEnv returns the container's env vars taken from the Secret, each
// with whether its secretKeyRef is optional.
func secretEnv(t *testing.T, where string, ctr any) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	env, _ := get(ctr, "env").([]any)
	for _, e := range env {
		name, _ := get(e, "name").(string)
		if v := get(e, "value"); v != nil {
			if strings.Contains(strings.ToUpper(name), "KEY") || strings.Contains(strings.ToUpper(name), "TOKEN") {
				t.Errorf("%s: %s has a literal value; secrets come from secretKeyRef", where, name)
			}
			continue
		}
		ref := get(e, "valueFrom", "secretKeyRef")
		if ref == nil {
			continue
		}
		wantEq(t, where+" env "+name+" secretKeyRef.name", get(ref, "name"), secretName)
		wantEq(t, where+" env "+name+" secretKeyRef.key", get(ref, "key"), name)
		opt, _ := get(ref, "optional").(bool)
		out[name] = opt
	}
	return out
}

// checkPod asserts what both variants share: the security context, the
// volumes and mounts, and the key variables the config names.
func checkPod(t *testing.T, where string, pod any, c *config.Config, secretKeys map[string]bool) any {
	t.Helper()
	wantEq(t, where+" serviceAccountName", get(pod, "serviceAccountName"), "driftprobe")
	psc := get(pod, "securityContext")
	wantEq(t, where+" securityContext.runAsNonRoot", get(psc, "runAsNonRoot"), true)
	wantEq(t, where+" securityContext.runAsUser", get(psc, "runAsUser"), 65532)
	wantEq(t, where+" securityContext.fsGroup", get(psc, "fsGroup"), 65532)
	wantEq(t, where+" securityContext.seccompProfile.type", get(psc, "seccompProfile", "type"), "RuntimeDefault")

	ctrs, _ := get(pod, "containers").([]any)
	if len(ctrs) != 1 {
		t.Fatalf("%s: want one container, got %d", where, len(ctrs))
	}
	ctr := ctrs[0]
	wantEq(t, where+" image", get(ctr, "image"), "ghcr.io/driftprobe/driftprobe:latest")
	csc := get(ctr, "securityContext")
	wantEq(t, where+" container readOnlyRootFilesystem", get(csc, "readOnlyRootFilesystem"), true)
	wantEq(t, where+" container allowPrivilegeEscalation", get(csc, "allowPrivilegeEscalation"), false)
	wantEq(t, where+" container capabilities.drop", get(csc, "capabilities", "drop"), []any{"ALL"})

	// Volumes by name, then mounts by path.
	vols := map[string]any{}
	list, _ := get(pod, "volumes").([]any)
	for _, v := range list {
		n, _ := get(v, "name").(string)
		vols[n] = v
	}
	mounts := map[string]any{}
	list, _ = get(ctr, "volumeMounts").([]any)
	for _, m := range list {
		p, _ := get(m, "mountPath").(string)
		n, _ := get(m, "name").(string)
		mounts[p] = vols[n]
		if vols[n] == nil {
			t.Errorf("%s: mount %s uses undefined volume %q", where, p, n)
		}
	}
	wantEq(t, where+" volume at "+dataDir, get(mounts[dataDir], "persistentVolumeClaim", "claimName"), pvcName)
	wantEq(t, where+" volume at "+configDir, get(mounts[configDir], "configMap", "name"), configMap)
	if get(mounts["/tmp"], "emptyDir") == nil {
		t.Errorf("%s: /tmp must be an emptyDir (the root filesystem is read-only)", where)
	}

	// The Go runtime's soft memory limit sits below the container's hard
	// one: near the limit the collector works harder instead of letting
	// the heap double (GOGC) into an OOM kill mid-run. Below it by enough
	// for what the runtime does not count (SQLite's page cache is mapped
	// outside the Go heap), not so far that memory is left unused.
	limit := k8sBytes(t, where+" resources.limits.memory", get(ctr, "resources", "limits", "memory"))
	var soft int64
	elist, _ := get(ctr, "env").([]any)
	for _, e := range elist {
		if get(e, "name") == "GOMEMLIMIT" {
			soft = goMemLimit(t, where+" GOMEMLIMIT", get(e, "value"))
		}
	}
	if soft == 0 {
		t.Errorf("%s: no GOMEMLIMIT in the container's env (the Go runtime would not know the %d MiB limit)", where, limit>>20)
	} else if soft > limit*95/100 || soft < limit*75/100 {
		t.Errorf("%s: GOMEMLIMIT %d MiB, want 75–95%% of the container's %d MiB limit", where, soft>>20, limit>>20)
	}

	env := secretEnv(t, where, ctr)
	if len(env) == 0 {
		t.Fatalf("%s: no env var from the Secret", where)
	}
	need := map[string]bool{}
	for _, tg := range c.Targets {
		if tg.APIKeyEnv != "" && !tg.Disabled {
			need[tg.APIKeyEnv] = true
		}
	}
	if c.GitHub != nil {
		need[c.GitHub.TokenEnv] = true
	}
	for _, k := range sortedKeys(need) {
		optional, ok := env[k]
		if !ok {
			t.Errorf("%s: the config reads %s but the container does not get it from the Secret", where, k)
		}
		// A variable the config needs is required: an optional one left out
		// of the Secret starts a pod that cannot do its job (a github block
		// without GITHUB_TOKEN queues GitHub deliveries that never send:
		// DriftprobeOutboxStuck, forever). Without GitHub, remove the
		// config's github block and the env entry instead.
		if optional {
			t.Errorf("%s: %s is optional in the Secret, but the config needs it", where, k)
		}
		if !secretKeys[k] {
			t.Errorf("secret.example.yaml does not document %s", k)
		}
	}
	return ctr
}

func argValue(args []string, flag string) (string, bool) {
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) {
		return "", false
	}
	return args[i+1], true
}

func strs(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func TestK8sManifests(t *testing.T) {
	docs := loadManifests(t)
	c := loadK8sConfig(t, docs)
	interval := scheduleInterval(t, c)

	secret := find(t, docs, "Secret")
	if filepath.Base(secret.file) != "secret.example.yaml" {
		t.Errorf("the Secret must only live in secret.example.yaml, found in %s", secret.file)
	}
	secretKeys := map[string]bool{}
	sd, _ := get(secret.m, "stringData").(map[string]any)
	for k := range sd {
		secretKeys[k] = true
	}

	for _, d := range docs {
		if d.kind() == "Kustomization" || d.kind() == "Namespace" {
			continue
		}
		wantEq(t, d.file+" "+d.kind()+" namespace", get(d.m, "metadata", "namespace"), "driftprobe")
	}
	pvc := find(t, docs, "PersistentVolumeClaim")
	wantEq(t, "PVC name", pvc.name(), pvcName)
	wantEq(t, "PVC accessModes", get(pvc.m, "spec", "accessModes"), []any{"ReadWriteOnce"})

	// The CronJob.
	cj := find(t, docs, "CronJob")
	wantEq(t, "CronJob apiVersion", cj.m["apiVersion"], "batch/v1")
	spec := get(cj.m, "spec")
	sched, _ := get(spec, "schedule").(string)
	cs, err := cron.ParseStandard(sched)
	if err != nil {
		t.Fatalf("CronJob schedule %q: %v", sched, err)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if n1 := cs.Next(t0); cs.Next(n1).Sub(n1) != time.Hour || n1.Sub(t0) != time.Hour {
		t.Errorf("CronJob schedule %q is not hourly", sched)
	}
	if interval != time.Hour {
		t.Errorf("config schedule %q must match the hourly CronJob (the staleness alert uses it)", c.Schedule)
	}
	wantEq(t, "CronJob timeZone", get(spec, "timeZone"), "Etc/UTC")
	// The very same slots: the CronJob's spec in its zone (the alert
	// follows the config's schedule slot by slot).
	if want := fmt.Sprintf("CRON_TZ=%s %s", get(spec, "timeZone"), sched); c.Schedule != want {
		t.Errorf("config schedule %q, want the CronJob's %q", c.Schedule, want)
	}
	wantEq(t, "CronJob concurrencyPolicy", get(spec, "concurrencyPolicy"), "Forbid")
	wantEq(t, "CronJob startingDeadlineSeconds", get(spec, "startingDeadlineSeconds"), 300)
	wantEq(t, "CronJob successfulJobsHistoryLimit", get(spec, "successfulJobsHistoryLimit"), 3)
	wantEq(t, "CronJob failedJobsHistoryLimit", get(spec, "failedJobsHistoryLimit"), 1)
	job := get(spec, "jobTemplate", "spec")
	// No retry of a failed run: `run` fails with exit 2 (the config: a
	// retry fails alike) or 3 (the lease held elsewhere, or a run that
	// was stored and probed, measured nothing or failed detection: a
	// retry pays for the whole corpus again and records another run,
	// which confirms flips minutes instead of an interval apart). The
	// next schedule runs anyway. A pod lost to a disruption (node drain,
	// preemption) is started again: it did not fail.
	wantEq(t, "Job backoffLimit", get(job, "backoffLimit"), 0)
	rules, _ := get(job, "podFailurePolicy", "rules").([]any)
	disruption := false
	for _, r := range rules {
		conds, _ := get(r, "onPodConditions").([]any)
		for _, c := range conds {
			if get(r, "action") == "Ignore" && get(c, "type") == "DisruptionTarget" {
				disruption = true
			}
		}
	}
	if !disruption {
		t.Errorf("Job podFailurePolicy %v: want a rule that ignores (restarts) pods failed by a DisruptionTarget", rules)
	}
	ads, _ := get(job, "activeDeadlineSeconds").(int)
	if ads <= 0 || time.Duration(ads)*time.Second >= interval {
		t.Errorf("Job activeDeadlineSeconds = %v, want > 0 and below the %v interval", get(job, "activeDeadlineSeconds"), interval)
	}
	if ttl, _ := get(job, "ttlSecondsAfterFinished").(int); ttl <= 0 {
		t.Errorf("Job ttlSecondsAfterFinished = %v, want > 0", get(job, "ttlSecondsAfterFinished"))
	}
	pod := get(job, "template", "spec")
	wantEq(t, "CronJob pod restartPolicy", get(pod, "restartPolicy"), "Never")
	// SIGTERM (the deadline, a drain) aborts the run, which then finishes
	// its writes (each may wait out the busy timeout) and still pushes its
	// metrics (up to app.PushTimeout): the default 30 s grace would SIGKILL
	// it mid-push. The deadline plus the grace stays below the interval.
	grace, _ := get(pod, "terminationGracePeriodSeconds").(int)
	if g := time.Duration(grace) * time.Second; g < storage.BusyTimeout+app.PushTimeout+10*time.Second || time.Duration(ads)*time.Second+g >= interval {
		t.Errorf("CronJob pod terminationGracePeriodSeconds = %v, want at least the busy timeout (%v) + the push timeout (%v) + 10s, and with activeDeadlineSeconds below the %v interval",
			get(pod, "terminationGracePeriodSeconds"), storage.BusyTimeout, app.PushTimeout, interval)
	}
	ctr := checkPod(t, "CronJob", pod, c, secretKeys)
	args := strs(get(ctr, "args"))
	if len(args) == 0 || args[0] != "run" {
		t.Errorf("CronJob args %v must start with run", args)
	}
	if v, _ := argValue(args, "--config"); v != configPath {
		t.Errorf("CronJob --config = %q, want %s", v, configPath)
	}
	if v, _ := argValue(args, "--db"); v != dbPath {
		t.Errorf("CronJob --db = %q, want %s", v, dbPath)
	}
	// A Job's metrics must reach Prometheus: pushed (a textfile in the
	// pod, on the PVC or elsewhere, is read by no node_exporter).
	if tf, ok := argValue(args, "--metrics-textfile"); ok {
		t.Errorf("CronJob --metrics-textfile %q: nothing reads a file in a Job's pod; push (--pushgateway)", tf)
	}
	gw, hasPush := argValue(args, "--pushgateway")
	if !hasPush || !strings.HasPrefix(gw, "http") {
		t.Errorf("CronJob args %v push no metrics (--pushgateway URL)", args)
	}
	// Grouped under a stable instance: the default, the host name, is the
	// Job pod's, new every run (each run would leave a group behind on the
	// Pushgateway). A $(VAR) must come from the pod's env.
	inst, ok := argValue(args, "--pushgateway-instance")
	if !ok || inst == "" || strings.Contains(inst, "HOSTNAME") || strings.Contains(inst, "POD_NAME)") {
		t.Errorf("CronJob --pushgateway-instance %q: want a name stable across runs", inst)
	}
	for _, m := range regexp.MustCompile(`\$\((\w+)\)`).FindAllStringSubmatch(inst, -1) {
		defined := false
		list, _ := get(ctr, "env").([]any)
		for _, e := range list {
			if get(e, "name") == m[1] && (get(e, "value") != nil || get(e, "valueFrom", "fieldRef", "fieldPath") == "metadata.namespace") {
				defined = true
			}
		}
		if !defined {
			t.Errorf("CronJob --pushgateway-instance uses $(%s), which the container's env does not define (as a value or the namespace)", m[1])
		}
	}

	// The Deployment (serve).
	dep := find(t, docs, "Deployment")
	wantEq(t, "Deployment replicas", get(dep.m, "spec", "replicas"), 1)
	wantEq(t, "Deployment strategy", get(dep.m, "spec", "strategy", "type"), "Recreate")
	dpod := get(dep.m, "spec", "template", "spec")
	dctr := checkPod(t, "Deployment", dpod, c, secretKeys)
	dargs := strs(get(dctr, "args"))
	if len(dargs) == 0 || dargs[0] != "serve" {
		t.Errorf("Deployment args %v must start with serve", dargs)
	}
	if v, _ := argValue(dargs, "--config"); v != configPath {
		t.Errorf("Deployment --config = %q, want %s", v, configPath)
	}
	if v, _ := argValue(dargs, "--listen"); v != fmt.Sprintf("0.0.0.0:%d", servePort) {
		t.Errorf("Deployment --listen = %q, want 0.0.0.0:%d", v, servePort)
	}
	wantEq(t, "Deployment containerPort", get(dctr, "ports", "0", "containerPort"), servePort)
	wantEq(t, "Deployment port name", get(dctr, "ports", "0", "name"), "metrics")
	wantEq(t, "livenessProbe path", get(dctr, "livenessProbe", "httpGet", "path"), "/healthz")
	wantEq(t, "readinessProbe path", get(dctr, "readinessProbe", "httpGet", "path"), "/readyz")
	sel, _ := get(dep.m, "spec", "selector", "matchLabels").(map[string]any)
	tmplLabels, _ := get(dep.m, "spec", "template", "metadata", "labels").(map[string]any)
	for k, v := range sel {
		if tmplLabels[k] != v {
			t.Errorf("Deployment selector %s=%v does not match the pod template", k, v)
		}
	}

	svc := find(t, docs, "Service")
	wantEq(t, "Service port", get(svc.m, "spec", "ports", "0", "port"), servePort)
	wantEq(t, "Service targetPort", get(svc.m, "spec", "ports", "0", "targetPort"), "metrics")
	ssel, _ := get(svc.m, "spec", "selector").(map[string]any)
	for k, v := range ssel {
		if tmplLabels[k] != v {
			t.Errorf("Service selector %s=%v does not select the serve pods", k, v)
		}
	}
}

// kustomizeFiles resolves a kustomization's resources to manifest files,
// following directories that hold their own kustomization.yaml.
func kustomizeFiles(t *testing.T, dir string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Namespace string   `yaml:"namespace"`
		Resources []string `yaml:"resources"`
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	var out []string
	for _, r := range k.Resources {
		p := filepath.Join(dir, r)
		if rel, err := filepath.Rel(k8sDir, p); err != nil || strings.HasPrefix(rel, "..") {
			t.Errorf("%s: resource %s is outside deploy/k8s", dir, r)
		}
		st, err := os.Stat(p)
		switch {
		case err != nil:
			t.Errorf("%s: resource %s: %v", dir, r, err)
		case st.IsDir():
			out = append(out, kustomizeFiles(t, p)...)
		default:
			// kustomize refuses files outside the kustomization's root.
			if strings.HasPrefix(r, "..") {
				t.Errorf("%s: file resource %s is outside the kustomization root; kustomize rejects it (reference a directory instead)", dir, r)
			}
			out = append(out, filepath.Clean(p))
		}
	}
	return out
}

func TestKustomizations(t *testing.T) {
	cronFiles := kustomizeFiles(t, k8sDir)
	serveFiles := kustomizeFiles(t, filepath.Join(k8sDir, "serve"))
	kinds := func(files []string) map[string]int {
		n := map[string]int{}
		for _, d := range loadManifests(t) {
			if slices.Contains(files, filepath.Clean(d.file)) {
				n[d.kind()]++
			}
		}
		return n
	}
	shared := []string{"Namespace", "ServiceAccount", "ConfigMap", "PersistentVolumeClaim"}
	ck, sk := kinds(cronFiles), kinds(serveFiles)
	for _, kind := range shared {
		if ck[kind] != 1 || sk[kind] != 1 {
			t.Errorf("%s: %d in the CronJob variant, %d in the serve variant; want 1 in each", kind, ck[kind], sk[kind])
		}
	}
	if ck["CronJob"] != 1 || ck["Deployment"] != 0 || ck["Service"] != 0 {
		t.Errorf("CronJob variant kinds = %v", ck)
	}
	if sk["Deployment"] != 1 || sk["Service"] != 1 || sk["CronJob"] != 0 {
		t.Errorf("serve variant kinds = %v", sk)
	}
	if ck["Secret"]+sk["Secret"] != 0 {
		t.Error("a kustomization applies secret.example.yaml; create the Secret out of band")
	}
	// Every manifest but the Secret example belongs to a variant.
	used := append(slices.Clone(cronFiles), serveFiles...)
	for _, d := range loadManifests(t) {
		if d.kind() == "Secret" || filepath.Base(d.file) == "kustomization.yaml" {
			continue
		}
		if !slices.Contains(used, filepath.Clean(d.file)) {
			t.Errorf("%s is in no kustomization", d.file)
		}
	}
}

// unit reads a systemd unit file into section.key -> values.
func unit(t *testing.T, name string) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(systemdDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Errorf("%s: bad line %q", name, line)
				continue
			}
			out[section+"."+k] = append(out[section+"."+k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSystemdUnits(t *testing.T) {
	one := func(u map[string][]string, key string) string {
		if v := u[key]; len(v) > 0 {
			return v[len(v)-1]
		}
		return ""
	}
	hardening := map[string]string{
		"Service.NoNewPrivileges": "yes",
		"Service.ProtectSystem":   "strict",
		"Service.ProtectHome":     "yes",
		"Service.PrivateTmp":      "yes",
		"Service.StateDirectory":  "driftprobe",
		"Service.EnvironmentFile": "/etc/driftprobe/env",
	}
	check := func(name string, u map[string][]string, want map[string]string) {
		for k, v := range want {
			if got := one(u, k); got != v {
				t.Errorf("%s: %s = %q, want %q", name, k, got, v)
			}
		}
		if one(u, "Service.DynamicUser") != "yes" && one(u, "Service.User") == "" {
			t.Errorf("%s: runs as root (want DynamicUser=yes or User=)", name)
		}
	}

	svc := unit(t, "driftprobe.service")
	check("driftprobe.service", svc, hardening)
	check("driftprobe.service", svc, map[string]string{"Service.Type": "oneshot"})
	exec := strings.Fields(one(svc, "Service.ExecStart"))
	if len(exec) < 2 || exec[0] != "/usr/local/bin/driftprobe" || exec[1] != "run" {
		t.Errorf("driftprobe.service ExecStart = %v, want /usr/local/bin/driftprobe run ...", exec)
	}
	if v, _ := argValue(exec, "--config"); v != configPath {
		t.Errorf("driftprobe.service --config = %q", v)
	}
	if v, _ := argValue(exec, "--db"); v != dbPath {
		t.Errorf("driftprobe.service --db = %q", v)
	}
	tf, _ := argValue(exec, "--metrics-textfile")
	if tf == "" || !slices.Contains(strings.Fields(strings.Join(svc["Service.ReadWritePaths"], " ")), filepath.Dir(tf)) {
		t.Errorf("driftprobe.service: --metrics-textfile %q must be in ReadWritePaths %v (ProtectSystem=strict)", tf, svc["Service.ReadWritePaths"])
	}
	// A DynamicUser can write the textfile directory only through a group
	// the install steps give it: the unit names the group, and its install
	// steps (and the README's) create the directory with it.
	group := one(svc, "Service.SupplementaryGroups")
	raw, _ := os.ReadFile(filepath.Join(systemdDir, "driftprobe.service"))
	readme, _ := os.ReadFile("../README.md")
	mk := "install -d -m 2775 -g " + group + " " + filepath.Dir(tf)
	if one(svc, "Service.DynamicUser") == "yes" && (group == "" || !strings.Contains(string(raw), mk) || !strings.Contains(string(readme), mk)) {
		t.Errorf("driftprobe.service: SupplementaryGroups %q; the unit's and README's install steps must run %q", group, mk)
	}

	// The example config the install steps copy is valid, runs where the
	// unit keeps its database, and says the timer's schedule.
	ex, err := config.Load(filepath.Join(systemdDir, "config.example.yaml"), false)
	if err != nil {
		t.Fatalf("config.example.yaml: %v", err)
	}
	if ex.Database != dbPath || ex.Schedule != "0 * * * *" || ex.Jitter.D() != 5*time.Minute {
		t.Errorf("config.example.yaml: database %q, schedule %q, jitter %s; want %s, the timer's hourly schedule, its 5m delay", ex.Database, ex.Schedule, ex.Jitter.D(), dbPath)
	}
	for _, steps := range []string{string(raw), string(readme)} {
		if !strings.Contains(steps, "install -D -m 0644 ") || !strings.Contains(steps, "config.example.yaml /etc/driftprobe/config.yaml") {
			t.Error("the install steps (unit and README) must install config.example.yaml as " + configPath)
		}
	}

	timer := unit(t, "driftprobe.timer")
	check2 := map[string]string{"Timer.OnCalendar": "hourly", "Timer.Persistent": "true", "Install.WantedBy": "timers.target"}
	for k, v := range check2 {
		if got := one(timer, k); got != v {
			t.Errorf("driftprobe.timer: %s = %q, want %q", k, got, v)
		}
	}
	if d, err := systemdSpan(one(timer, "Timer.RandomizedDelaySec")); err != nil || d <= 0 || d >= 30*time.Minute {
		t.Errorf("driftprobe.timer: RandomizedDelaySec = %q, want a delay well under the hour", one(timer, "Timer.RandomizedDelaySec"))
	}

	serve := unit(t, "driftprobe-serve.service")
	check("driftprobe-serve.service", serve, hardening)
	check("driftprobe-serve.service", serve, map[string]string{"Service.Type": "notify", "Service.NotifyAccess": "main", "Service.Restart": "on-failure"})
	sexec := strings.Fields(one(serve, "Service.ExecStart"))
	if len(sexec) < 2 || sexec[1] != "serve" {
		t.Errorf("driftprobe-serve.service ExecStart = %v, want driftprobe serve ...", sexec)
	}
	if v, _ := argValue(sexec, "--listen"); v != fmt.Sprintf("0.0.0.0:%d", servePort) {
		t.Errorf("driftprobe-serve.service --listen = %q", v)
	}
}

// systemdSpan parses the time spans these units use: plain seconds, or Go
// style "5m", "30s", "1h" (systemd reads those the same way).
func systemdSpan(s string) (time.Duration, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	return time.ParseDuration(s)
}

// k8sBytes parses a Kubernetes memory quantity in binary units (512Mi,
// 1Gi) into bytes.
func k8sBytes(t *testing.T, where string, v any) int64 {
	t.Helper()
	q, _ := v.(string)
	for suffix, mult := range map[string]int64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30} {
		if n, ok := strings.CutSuffix(q, suffix); ok {
			if i, err := strconv.ParseInt(n, 10, 64); err == nil && i > 0 {
				return i * mult
			}
		}
	}
	t.Fatalf("%s = %v: want a quantity such as 512Mi", where, v)
	return 0
}

// goMemLimit parses a GOMEMLIMIT value (bytes, or a number with B, KiB,
// MiB or GiB, as the Go runtime reads it) into bytes.
func goMemLimit(t *testing.T, where string, v any) int64 {
	t.Helper()
	s, _ := v.(string)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"B", 1}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = n, u.mult
			break
		}
	}
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil || i <= 0 {
		t.Fatalf("%s = %v: want bytes or a number with KiB, MiB or GiB", where, v)
	}
	return i * mult
}
