package cluster

import (
	"reflect"
	"testing"
	"time"
)

func TestPurgeMessageRoundTrip(t *testing.T) {
	m := message{Kind: kindPurge, Node: "a", Sent: time.Unix(0, 1234),
		Purges: []purgeRecord{{Host: "example.com", Target: "/x?y=1", Prefix: false}, {Host: "h:8080", Target: "/", Prefix: true}}}
	got, err := decodeMessage(appendMessage(nil, &m))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Purges, m.Purges) || got.Node != "a" || !got.Sent.Equal(m.Sent) {
		t.Fatalf("got %+v, want %+v", got, m)
	}
	if _, err := decodeMessage(appendMessage(nil, &m)[:20]); err == nil {
		t.Fatal("a truncated purge decoded")
	}
}
