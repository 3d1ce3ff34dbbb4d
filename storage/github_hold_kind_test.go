package storage

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// Migration 0024 adds github_holds.kind: a wait recorded before it (by a
// schema-23 driftprobe) is kept as it was, with no kind (empty), which
// ghissue reads as the release that recorded it did; db check verifies
// the migrated database.
func TestGitHubHoldKindMigration(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "old.db")
	oldSchema(t, p, 23)
	raw, err := sql.Open("sqlite", fileURI(p))
	if err != nil {
		t.Fatal(err)
	}
	_, err = raw.Exec(`INSERT INTO github_holds (api, credential, until, failures, reason, at) VALUES ('https://api.github.com', '', '2026-12-01T01:00:00Z', 2, 'GitHub unreachable (dial tcp: i/o timeout)', '2026-12-01T00:59:00Z')`)
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if from, to := d.Migrated(); from != 23 || to != SchemaLatest() || to < 24 {
		t.Fatalf("migrated %d → %d, want 23 → %d (at least 24)", from, to, SchemaLatest())
	}
	var kind, reason string
	var failures int
	if err := d.SQL().QueryRowContext(ctx, `SELECT kind, reason, failures FROM github_holds`).Scan(&kind, &reason, &failures); err != nil {
		t.Fatal(err)
	}
	if kind != "" || reason != "GitHub unreachable (dial tcp: i/o timeout)" || failures != 2 {
		t.Errorf("hold after the migration: kind %q, reason %q, failures %d; want it as recorded, no kind", kind, reason, failures)
	}
	if rep, err := d.Check(ctx, CheckOptions{}); err != nil || !rep.OK {
		t.Errorf("db check after the migration: %+v %v", rep, err)
	}
}
