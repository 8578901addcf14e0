package session

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func pageKeys(p []Entry[string]) string {
	var ks []string
	for _, e := range p {
		ks = append(ks, e.Key)
	}
	return strings.Join(ks, ",")
}

func TestPage(t *testing.T) {
	clk := newFakeClock()
	tb := NewTable[string](10*time.Second, 0, clk.Now)
	tb.Store([]byte("old"), "v-old")
	clk.Advance(11 * time.Second) // "old" has expired; the rest are live
	for _, k := range []string{"d", "a", "c", "e", "b"} {
		tb.Store([]byte(k), "v-"+k)
	}
	tests := []struct {
		name  string
		after string
		limit int
		want  string
		more  bool
	}{
		{"first page", "", 2, "a,b", true},
		{"middle page", "b", 2, "c,d", true},
		{"last page is short", "d", 2, "e", false},
		{"exactly the rest", "c", 2, "d,e", false},
		{"after the last key", "e", 2, "", false},
		{"after a key that is not in the table", "bb", 1, "c", true},
		{"expired sessions are not listed", "n", 5, "", false},
		{"zero limit only says whether more follow", "a", 0, "", true},
		{"zero limit at the end", "e", 0, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			page, more := tb.Page(tc.after, tc.limit)
			if got := pageKeys(page); got != tc.want || more != tc.more {
				t.Errorf("Page(%q, %d) = %q, %v; want %q, %v", tc.after, tc.limit, got, more, tc.want, tc.more)
			}
			for _, e := range page {
				if e.Value != "v-"+e.Key {
					t.Errorf("%s: value %q", e.Key, e.Value)
				}
			}
		})
	}
}

// Paging through a table of many shards visits every live session once,
// in key order, whatever the page size.
func TestPageWalksWholeTable(t *testing.T) {
	tb := NewTable[int](time.Hour, 1<<16, nil) // 32 shards
	var want []string
	for i := range 5000 {
		k := fmt.Sprintf("%08x", uint32(i)*2654435761)
		tb.Store([]byte(k), i)
		want = append(want, k)
	}
	slices.Sort(want)
	for _, size := range []int{1, 7, 1000, 5000, 6000} {
		var got []string
		after, pages := "", 0
		for more := true; more; pages++ {
			var page []Entry[int]
			page, more = tb.Page(after, size)
			for _, e := range page {
				got = append(got, e.Key)
			}
			if len(page) > 0 {
				after = page[len(page)-1].Key
			}
			if pages > 6000 {
				t.Fatalf("page size %d: no end after %d pages", size, pages)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("page size %d: %d keys in %d pages, want the %d in order", size, len(got), pages, len(want))
		}
	}
}
