// Package corpus loads, canonicalizes, hashes, lints and locks probe corpora.
//
// A corpus is a directory holding corpus.yaml (name, version, probes) and
// corpus.lock (version → content hash). Every probe has a canonical form and
// a SHA-256 over it; the corpus content hash is the SHA-256 of the sorted
// "id sha256" lines. Changing any probe's bytes without bumping the version
// is refused: observations are only comparable across runs when the bytes
// they were made on are the bytes the version names.
package corpus

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/driftprobe/driftprobe/internal/problems"
	"github.com/driftprobe/driftprobe/internal/yamlx"
	"github.com/driftprobe/driftprobe/probes"
	"gopkg.in/yaml.v3"
)

// Expectations and roles.
const (
	ExpectAllow  = "allow"
	ExpectBlock  = "block"
	ExpectEither = "either"

	RoleBenign     = "benign_control"
	RoleBorderline = "borderline"
	RolePositive   = "positive_control"
)

// File names inside a corpus directory.
const (
	FileName = "corpus.yaml"
	LockName = "corpus.lock"
)

// Probe is one corpus entry.
type Probe struct {
	ID       string           `yaml:"id" json:"id"`
	Prompt   string           `yaml:"prompt,omitempty" json:"-"`
	Messages []probes.Message `yaml:"messages,omitempty" json:"messages"`
	Tags     []string         `yaml:"tags" json:"tags"`
	Expect   string           `yaml:"expect" json:"expect"`
	Role     string           `yaml:"role" json:"role"`

	SHA256 string `yaml:"-" json:"-"` // hash of the canonical form

	canonical []byte // the canonical form SHA256 was computed from, set at load
}

// Wire returns what a provider renders.
func (p *Probe) Wire() probes.Probe { return probes.Probe{ID: p.ID, Messages: p.Messages} }

// Corpus is a loaded, validated corpus.
type Corpus struct {
	Name    string   `yaml:"name"`
	Version string   `yaml:"version"`
	Probes  []*Probe `yaml:"probes"`

	Hash string `yaml:"-"` // content hash
	Dir  string `yaml:"-"` // source directory; "" for the embedded default

	root *yaml.Node // the parsed corpus.yaml, to locate lock errors
}

//go:embed default
var defaultFS embed.FS

// Default returns the embedded default corpus, checked against its own lock.
func Default() (*Corpus, error) {
	sub, _ := fs.Sub(defaultFS, "default")
	c, err := LoadFS(sub, "default")
	if err != nil {
		return nil, err
	}
	c.Dir = ""
	lock, err := readLock(sub, "default/"+LockName)
	if err != nil {
		return nil, err
	}
	if err := lock.check(c, "default/"+FileName); err != nil {
		return nil, err
	}
	return c, nil
}

// Load loads the corpus in dir (without consulting its lock; see CheckLock).
func Load(dir string) (*Corpus, error) {
	c, err := LoadFS(os.DirFS(dir), dir)
	if err != nil {
		return nil, err
	}
	c.Dir = dir
	return c, nil
}

// plainText reports whether s is valid UTF-8 without control or format
// characters: a corpus name or version is printed on terminals, in logs
// and in issues, where an escape sequence or a bidirectional override
// would rewrite what is shown.
func plainText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			return false
		}
	}
	return true
}

var idRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidID reports whether id is a probe id a corpus may hold: a letter or
// digit, then up to 127 letters, digits, '.', '_' or '-'.
func ValidID(id string) bool { return idRe.MatchString(id) }

// LoadFS loads corpus.yaml from fsys; name prefixes file names in errors.
func LoadFS(fsys fs.FS, name string) (*Corpus, error) {
	file := filepath.Join(name, FileName)
	data, err := fs.ReadFile(fsys, FileName)
	if err != nil {
		// The error names the file inside fsys only ("open corpus.yaml"):
		// name it as the user gave the directory.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		hint := ""
		if errors.Is(err, fs.ErrNotExist) {
			hint = fmt.Sprintf(" (a corpus directory holds %s and %s)", FileName, LockName)
		}
		return nil, fmt.Errorf("%s: cannot read corpus: %w%s", file, err, hint)
	}
	var c Corpus
	root, err := yamlx.Decode(file, data, &c)
	// An unknown field or a value of the wrong type hides no other
	// problem: every one of the file is reported at once.
	decoded, ok := problems.Readable(err)
	if !ok {
		return nil, err
	}
	empty := &yamlx.Collector{File: file, Root: root}
	emptyEntries(empty, root)
	if decoded = append(decoded, empty.List...); len(decoded) > 0 {
		// The decoder dropped the list items it could not read (and the
		// empty ones): read the values again, each item at its own
		// index. The corpus is refused: nothing here is hashed.
		c = readable(root)
	}
	col := &yamlx.Collector{File: file, Root: root}
	c.validate(col)
	if l := problems.Combine(root, decoded, col.List, promptRelated); len(l) > 0 {
		return nil, problems.Cap(l)
	}
	c.Hash = c.contentHash()
	c.root = root
	return &c, nil
}

// validate adds c's problems to col, and canonicalizes and hashes every
// probe: a prompt becomes the one user message, tags are sorted and
// deduplicated.
func (c *Corpus) validate(col *yamlx.Collector) {
	if strings.TrimSpace(c.Name) == "" {
		col.Add("name", "required")
	} else if !plainText(c.Name) {
		col.Add("name", "%+q: control or formatting characters (escape sequences, bidirectional overrides, line breaks) are not allowed", c.Name)
	}
	if strings.TrimSpace(c.Version) == "" {
		col.Add("version", "required")
	} else if !plainText(c.Version) {
		col.Add("version", "%+q: control or formatting characters (escape sequences, bidirectional overrides, line breaks) are not allowed", c.Version)
	}
	if len(c.Probes) == 0 {
		col.Add("probes", "at least one probe is required")
	}
	seen := map[string]int{}
	for i, p := range c.Probes {
		at := fmt.Sprintf("probes[%d]", i)
		if p == nil { // `- ~` or `- ` decodes to no probe at all
			col.Add(at, "empty entry: a probe needs id, prompt (or messages), expect and role")
			continue
		}
		switch {
		case p.ID == "":
			col.Add(at+".id", "required")
		case !idRe.MatchString(p.ID):
			col.Add(at+".id", "%q: use letters, digits, '.', '_' or '-' (at most 128)", p.ID)
		default:
			if j, dup := seen[p.ID]; dup {
				col.Add(at+".id", "duplicate id %q (first at probes[%d])", p.ID, j)
			}
			seen[p.ID] = i
		}
		switch {
		case p.Prompt != "" && len(p.Messages) > 0:
			col.Add(at+".prompt", "give prompt or messages, not both")
		case p.Messages != nil && len(p.Messages) == 0 && p.Prompt == "":
			col.Add(at+".messages", "empty list: give the messages (the last from the user), or a prompt")
		case len(p.Messages) == 0 && strings.TrimSpace(p.Prompt) == "":
			col.Add(at+".prompt", "empty prompt")
		case p.Prompt != "":
			p.Messages = []probes.Message{{Role: "user", Content: p.Prompt}}
			p.Prompt = ""
		default:
			for j, m := range p.Messages {
				if m == (probes.Message{}) { // `- ~`: one problem, not a role and a content
					col.Add(fmt.Sprintf("%s.messages[%d]", at, j), "empty entry: a message needs role and content")
					continue
				}
				switch m.Role {
				case "system", "user", "assistant":
				default:
					col.Add(fmt.Sprintf("%s.messages[%d].role", at, j), "%q: want system, user or assistant", m.Role)
				}
				if strings.TrimSpace(m.Content) == "" {
					col.Add(fmt.Sprintf("%s.messages[%d].content", at, j), "empty message")
				}
			}
			// An empty last entry is reported above; a missing or unknown
			// role too (a misspelt "User" is one problem, not two).
			if last := p.Messages[len(p.Messages)-1]; last.Role == "system" || last.Role == "assistant" {
				col.Add(at+".messages", "the last message must be from the user")
			}
		}
		for j, t := range p.Tags {
			switch {
			case t == "":
				col.Add(fmt.Sprintf("%s.tags[%d]", at, j), "empty tag (want one of %s)", strings.Join(probes.Categories, ", "))
			case !probes.ValidCategory(t):
				col.Add(fmt.Sprintf("%s.tags[%d]", at, j), "unknown category %q (want one of %s)", t, strings.Join(probes.Categories, ", "))
			}
		}
		p.Tags = probes.SortedUnique(p.Tags)
		switch p.Expect {
		case ExpectAllow, ExpectBlock, ExpectEither:
		case "":
			col.Add(at+".expect", "required (allow, block or either)")
		default:
			col.Add(at+".expect", "%q: want allow, block or either", p.Expect)
		}
		switch p.Role {
		case RoleBenign, RoleBorderline, RolePositive:
		case "":
			col.Add(at+".role", "required (benign_control, borderline or positive_control)")
		default:
			col.Add(at+".role", "%q: want benign_control, borderline or positive_control", p.Role)
		}
		p.canonical = p.render()
		p.SHA256 = hashHex(p.canonical)
	}
}

// promptRelated maps a probe's prompt to its messages for
// problems.Combine: a prompt is "empty" when the messages given instead
// could not be read.
func promptRelated(field string) string {
	if f, ok := strings.CutSuffix(field, ".prompt"); ok {
		return f + ".messages"
	}
	return field
}

// readable reads the corpus in root as the decoder does, but one list
// item at a time (probes, their messages and tags), so that every item
// keeps the index it is written at: the decoder drops an item it cannot
// read, or an empty one, and the problems of the items after it would
// name the wrong entry. An item or value that cannot be read is left
// empty (nil for a probe written `- ~`); its problem is the decoder's,
// or emptyEntries'.
func readable(root *yaml.Node) Corpus {
	var c Corpus
	str := func(path string, s *string) {
		if n := yamlx.Find(root, path); n != nil && !yamlx.IsNull(n) {
			problems.Decode(n, s)
		}
	}
	str("name", &c.Name)
	str("version", &c.Version)
	ps := yamlx.Find(root, "probes")
	if ps == nil || ps.Kind != yaml.SequenceNode {
		return c
	}
	c.Probes = make([]*Probe, len(ps.Content))
	for i, item := range ps.Content {
		if yamlx.IsNull(item) {
			continue
		}
		at := fmt.Sprintf("probes[%d]", i)
		p := &Probe{}
		str(at+".id", &p.ID)
		str(at+".prompt", &p.Prompt)
		str(at+".expect", &p.Expect)
		str(at+".role", &p.Role)
		p.Messages, _ = problems.Items[probes.Message](root, at+".messages")
		p.Tags, _ = problems.Items[string](root, at+".tags")
		c.Probes[i] = p
	}
	return c
}

// emptyEntries reports the empty list items (`- ` or `- ~`) of probes,
// messages and tags. The decoder keeps an empty probe as nil but drops an
// empty message or tag, shifting every later index, so the values are
// then read again item by item (readable) before they are checked.
func emptyEntries(col *yamlx.Collector, root *yaml.Node) {
	items := func(path string) []*yaml.Node {
		if n := yamlx.Find(root, path); n != nil && n.Kind == yaml.SequenceNode {
			return n.Content
		}
		return nil
	}
	for i, p := range items("probes") {
		at := fmt.Sprintf("probes[%d]", i)
		if yamlx.IsNull(p) {
			col.Add(at, "empty entry: a probe needs id, prompt (or messages), expect and role")
			continue
		}
		for j, m := range items(at + ".messages") {
			if yamlx.IsNull(m) {
				col.Add(fmt.Sprintf("%s.messages[%d]", at, j), "empty entry: a message needs role and content")
			}
		}
		for j, t := range items(at + ".tags") {
			if yamlx.IsNull(t) {
				col.Add(fmt.Sprintf("%s.tags[%d]", at, j), "empty entry: want one of %s", strings.Join(probes.Categories, ", "))
			}
		}
	}
}

// Canonical returns the canonical JSON form of the probe: id, messages,
// sorted tags, expect and role, in that order, without HTML escaping. For a
// loaded probe it is the form its SHA256 was computed from, kept from load
// (a copy, so callers may modify it); for one built in code it is computed
// now.
func (p *Probe) Canonical() []byte {
	if p.canonical != nil {
		return append([]byte(nil), p.canonical...)
	}
	return p.render()
}

func (p *Probe) render() []byte {
	type canon struct {
		ID       string           `json:"id"`
		Messages []probes.Message `json:"messages"`
		Tags     []string         `json:"tags"`
		Expect   string           `json:"expect"`
		Role     string           `json:"role"`
	}
	tags := p.Tags
	if tags == nil {
		tags = []string{}
	}
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(canon{p.ID, p.Messages, tags, p.Expect, p.Role})
	return []byte(strings.TrimSuffix(sb.String(), "\n"))
}

func hashHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func (c *Corpus) contentHash() string {
	lines := make([]string, len(c.Probes))
	for i, p := range c.Probes {
		lines[i] = p.ID + " " + p.SHA256 + "\n"
	}
	sort.Strings(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Probe returns the probe with the given id, or nil.
func (c *Corpus) Probe(id string) *Probe {
	for _, p := range c.Probes {
		if p.ID == id {
			return p
		}
	}
	return nil
}

// Categories returns the sorted set of tags used by the corpus.
func (c *Corpus) Categories() []string {
	var all []string
	for _, p := range c.Probes {
		all = append(all, p.Tags...)
	}
	return probes.SortedUnique(all)
}

// Warnings returns what is legal but probably a mistake: probes whose ids
// differ only in case (two probes to the database, one to a reader, a
// case-insensitive file system or a spreadsheet), and probes that send the
// same messages (every run sends the same bytes twice, and a change on them
// is counted twice).
func (c *Corpus) Warnings() []string {
	var out []string
	folded := map[string]string{}
	for _, p := range c.Probes {
		k := strings.ToLower(p.ID)
		if id, ok := folded[k]; ok {
			out = append(out, fmt.Sprintf("probe %s differs from probe %s only in case: two probes, easily read as one (rename one)", p.ID, id))
			continue
		}
		folded[k] = p.ID
	}
	first := map[string]string{}
	for _, p := range c.Probes {
		var k strings.Builder
		for _, m := range p.Messages {
			k.WriteString(m.Role)
			k.WriteByte(0)
			k.WriteString(m.Content)
			k.WriteByte(0)
		}
		if id, ok := first[k.String()]; ok {
			out = append(out, fmt.Sprintf("probe %s sends the same messages as %s: every run sends them twice, and a change on them counts twice", p.ID, id))
			continue
		}
		first[k.String()] = p.ID
	}
	return out
}

// ErrChangedUnderVersion is returned when a corpus's bytes changed while its
// version stayed the same.
var ErrChangedUnderVersion = errors.New("corpus content changed under an unchanged version")
