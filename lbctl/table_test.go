package lbctl

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestWriteTableMatchesTabwriter checks that the aligned table is what
// tabwriter writes for the same rows, byte for byte: named cases, then
// random rows of ASCII, multi-byte, invalid UTF-8, empty cells and the
// bytes that send the table through tabwriter itself.
func TestWriteTableMatchesTabwriter(t *testing.T) {
	cases := []struct {
		name string
		rows []row
	}{
		{"no rows", nil},
		{"one backend", []row{{"/1/0/0", "backend", "-", "http://10.0.0.1:80", "active", "5", "0", "-", "14", "1.5ms", "-"}}},
		{"empty cells", []row{{"", "", "", "", "", "", "", "", "", "", ""}, {"/1", "listener", "", "", "", "", "", "", "", "", "x"}}},
		{"multi-byte name", []row{{"/1/0", "service", "café→", "-", "enabled", "-", "-", "-", "-", "-", "3"}}},
		{"invalid UTF-8", []row{{"/1/0", "service", "a\x80\xc3b", "-", "enabled", "-", "-", "-", "-", "-", "-"}}},
		{"wide last column", []row{{"/1", "listener", "-", "-", "enabled", "-", "-", "-", "-", "-", strings.Repeat("9", 40)}}},
		{"tab in a name", []row{{"/1/0", "service", "a\tb", "-", "enabled", "-", "-", "-", "-", "-", "-"}}},
		{"newline in a name", []row{{"/1/0", "service", "a\nb", "-", "enabled", "-", "-", "-", "-", "-", "-"}}},
		{"form feed in a name", []row{{"/1/0", "service", "a\fb", "-", "enabled", "-", "-", "-", "-", "-", "-"}}},
		{"escape byte in a name", []row{{"/1/0", "service", "a\xffb\xffc", "-", "enabled", "-", "-", "-", "-", "-", "-"}}},
	}
	rng := rand.New(rand.NewPCG(36, 38))
	alphabet := []string{"a", "Z", "0", "/", "-", " ", "é", "→", "😀", "\x80", "\r", ""}
	for n := 0; n < 200; n++ {
		rows := make([]row, rng.IntN(40))
		for i := range rows {
			var cells [rowColumns]string
			for c := range cells {
				var sb strings.Builder
				for k := rng.IntN(12); k > 0; k-- {
					sb.WriteString(alphabet[rng.IntN(len(alphabet))])
				}
				cells[c] = sb.String()
			}
			if n%10 == 0 && i == 0 {
				cells[rng.IntN(rowColumns)] += []string{"\t", "\n", "\v", "\f", "\xff"}[rng.IntN(5)]
			}
			rows[i] = row{cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6], cells[7], cells[8], cells[9], cells[10]}
		}
		cases = append(cases, struct {
			name string
			rows []row
		}{"random", rows})
	}
	for _, tc := range cases {
		for _, dialect := range []string{dialectPound, dialectZproxy} {
			var got, want bytes.Buffer
			if err := writeTable(&got, dialect, tc.rows); err != nil {
				t.Fatal(err)
			}
			if err := writeTabTable(&want, tableHeader(dialect), tc.rows); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("%s (%s): got\n%q\nwant\n%q", tc.name, dialect, got.String(), want.String())
			}
		}
	}
}

// TestWriteTableLarge checks a table larger than the write buffer comes
// out whole and aligned.
func TestWriteTableLarge(t *testing.T) {
	rows := make([]row, 5000)
	for i := range rows {
		rows[i] = row{"/1/" + strings.Repeat("7", i%9), "backend", "-", "http://127.0.0.1:80", "active", "5", "0", "-", "0", "-", "-"}
	}
	var got, want bytes.Buffer
	if err := writeTable(&got, dialectPound, rows); err != nil {
		t.Fatal(err)
	}
	if err := writeTabTable(&want, tableHeader(dialectPound), rows); err != nil {
		t.Fatal(err)
	}
	if got.Len() < 128<<10 || !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("%d bytes, tabwriter %d; equal %v", got.Len(), want.Len(), bytes.Equal(got.Bytes(), want.Bytes()))
	}
}
