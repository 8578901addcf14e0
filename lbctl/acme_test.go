package lbctl

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestWriteACME(t *testing.T) {
	reply := `{"directory":"https://ca.example/dir","certificates":[
		{"name":"a.example.com","issuer":"CA R1","serial":"0a1b","not_after":"2027-02-28T10:00:00.000Z","next_renewal":"2027-01-29T10:00:00.000Z","ocsp_stapled":true,"ordering":false,"last_error":null,"last_error_at":null},
		{"name":"b.example.com","issuer":null,"serial":null,"not_after":null,"next_renewal":null,"ordering":false,"last_error":"connection refused","last_error_at":"2026-12-01T09:59:00.000Z"},
		{"name":"c.example.com","issuer":null,"serial":null,"not_after":null,"next_renewal":null,"ordering":true,"last_error":null,"last_error_at":null}]}`
	var v acmeView
	if err := json.Unmarshal([]byte(reply), &v); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := writeACME(&out, &v, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := [][]string{
		{"ACME directory https://ca.example/dir, 3 names"},
		{"NAME", "ISSUER", "SERIAL", "NOT AFTER", "NEXT RENEWAL", "STATE", "LAST ERROR"},
		{"a.example.com", "CA R1", "0a1b", "2027-02-28T10:00:00.000Z", "2027-01-29T10:00:00.000Z", "valid, OCSP stapled", "-"},
		{"b.example.com", "-", "-", "-", "-", "none yet", "1m0s ago: connection refused"},
		{"c.example.com", "-", "-", "-", "-", "ordering", "-"},
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines:\n%s", len(lines), out.String())
	}
	for i, cols := range want {
		for _, c := range cols {
			if !strings.Contains(lines[i], c) {
				t.Errorf("line %d %q lacks %q", i, lines[i], c)
			}
		}
	}
}
