package evidence

// Rehash recomputes r's record_sha256 after a test edited it, as a forger
// who knows the format could.
func (r *Record) Rehash() error {
	s, err := r.hash()
	r.SHA256 = s
	return err
}
