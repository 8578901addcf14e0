package parser

import (
	"fmt"
	"strings"
	"testing"
)

// genConfig builds a Pound configuration with services services of
// backends backends each, about 4+services*(5+4*backends) lines.
func genConfig(services, backends int) []byte {
	var sb strings.Builder
	sb.WriteString("User \"nobody\"\nGroup \"nogroup\"\nListenHTTP\n\tAddress 127.0.0.1\n\tPort 8080\n")
	for s := 0; s < services; s++ {
		fmt.Fprintf(&sb, "\tService \"svc%d\"\n\t\tURL \"^/svc%d/.*\\.css$\"\n\t\tHost \"svc%d.example.org\"\n", s, s, s)
		for b := 0; b < backends; b++ {
			fmt.Fprintf(&sb, "\t\tBackEnd\n\t\t\tAddress 10.%d.%d.%d\n\t\t\tPort 80\n\t\tEnd\n", s>>8&255, s&255, b)
		}
		sb.WriteString("\tEnd\n")
	}
	sb.WriteString("End\n")
	return []byte(sb.String())
}

// BenchmarkParse parses 10,000 services x 4 backends (~200k lines); the
// target is well under 0.5 s per op.
func BenchmarkParse(b *testing.B) {
	src := genConfig(10000, 4)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		_, d := Parse("bench.cfg", src, Options{})
		if d.HasErrors() {
			b.Fatal(d.Err())
		}
	}
}
