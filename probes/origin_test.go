package probes

import "testing"

func TestURLOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"https://myres.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21": "https://myres.openai.azure.com",
		"https://MyRes.OpenAI.Azure.com:443/x":                                                        "https://myres.openai.azure.com",
		"HTTP://127.0.0.1:8080/v1/chat/completions":                                                   "http://127.0.0.1:8080",
		"http://localhost:80/v1":                                                                      "http://localhost",
		"https://bedrock-runtime.eu-west-1.amazonaws.com/model/m/converse":                            "https://bedrock-runtime.eu-west-1.amazonaws.com",
		"http://[::1]:4000/v1":                                                                        "http://[::1]:4000",
		"https://user:secret@gw.example.com/v1":                                                       "https://gw.example.com",
		"/v1/chat/completions":                                                                        "",
		"::":                                                                                          "",
	} {
		if got := URLOrigin(in); got != want {
			t.Errorf("URLOrigin(%q) = %q, want %q", in, got, want)
		}
	}
}
