package diff

import "strconv"

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', 4, 64) }

func parseFloat(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}
