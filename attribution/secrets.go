package attribution

import (
	"cmp"
	"encoding/base64"
	"net/url"
	"slices"
	"strings"

	"github.com/driftprobe/driftprobe/probes/wire"
)

// URLSecrets returns the credentials a request to rawURL sends, in every
// form a server (or a proxy in front of it) may echo them, longest first:
// the user information as written (percent-escaped), the user name (a
// token is often given as the user name) and the password, the Basic
// credential net/http sends for them (base64 of user:password, padded and
// unpadded, standard and URL-safe alphabets), and the values of the query.
// None when rawURL carries none or does not parse. The Prometheus client
// here and the Pushgateway push (internal/app) mask them with MaskSecrets.
func URLSecrets(rawURL string) []string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil
	}
	var out []string
	if u.User != nil {
		user := u.User.Username()
		pass, _ := u.User.Password()
		out = append(out, u.User.String(), user, pass)
		basic := []byte(user + ":" + pass)
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			out = append(out, enc.EncodeToString(basic))
		}
	}
	for _, vs := range u.Query() {
		out = append(out, vs...)
	}
	return longestFirst(out)
}

// minSecret is the shortest secret MaskSecrets replaces as given: shorter
// ones would mangle unrelated text.
const minSecret = 3

// MaskSecrets returns s with every secret (of 3 bytes or more) replaced:
// as given, and percent-escaped as a URL's query or path spells it, by
// mask; then in every other spelling wire.RedactString finds (JSON escapes
// at any depth, any percent-encoding, a run of 12 or more of a secret's
// letters and digits) by wire.Redacted. Longer secrets go first, so a
// shorter one inside a longer one (the user name inside the Basic
// credential, by chance) cannot break it up before it is found. Mask
// whole server text before cutting it: a secret cut in two is matched by
// neither piece.
func MaskSecrets(s, mask string, secrets []string) string {
	var spell []string
	for _, sec := range secrets {
		if len(sec) >= minSecret {
			spell = append(spell, sec, url.QueryEscape(sec), url.PathEscape(sec))
		}
	}
	spell = longestFirst(spell)
	if len(spell) == 0 {
		return s
	}
	for _, sp := range spell {
		s = strings.ReplaceAll(s, sp, mask)
	}
	return wire.RedactString(s, longestFirst(secrets)...)
}

// MaskError returns err with its message passed through MaskSecrets (err
// itself when there are no secrets). errors.Is and As still see err.
func MaskError(err error, mask string, secrets []string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	return maskedError{err: err, mask: mask, secrets: secrets}
}

type maskedError struct {
	err     error
	mask    string
	secrets []string
}

func (e maskedError) Error() string { return MaskSecrets(e.err.Error(), e.mask, e.secrets) }
func (e maskedError) Unwrap() error { return e.err }

// longestFirst returns the distinct non-empty strings of ss, longest
// first (ties in byte order, for a stable result).
func longestFirst(ss []string) []string {
	out := slices.DeleteFunc(slices.Clone(ss), func(s string) bool { return s == "" })
	slices.SortFunc(out, func(a, b string) int {
		if c := cmp.Compare(len(b), len(a)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return slices.Compact(out)
}
