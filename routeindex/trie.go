package routeindex

import "slices"

// trie is a byte trie over folded keys, flattened into arrays after it
// is built: a node is six int32s, its edges a run of labels and kids, its
// services runs of ids. Walking it costs one short edge search per byte
// of the subject, whatever the number of keys.
type trie struct {
	nodes  []tnode
	labels []byte
	kids   []int32
	ids    []int32
}

// tnode: edges are labels/kids[edge:edge+nedge] (labels sorted); pre
// lists the services whose key ends here as a prefix (or suffix, in a
// reversed trie), exact those whose key ends here as the whole subject.
type tnode struct {
	edge, nedge int32
	pre, npre   int32
	exact, nex  int32
}

// buildNode is a trie node while keys are added.
type buildNode struct {
	kids       map[byte]*buildNode
	pre, exact []int32
}

type trieBuilder struct {
	root  buildNode
	empty bool
}

func newTrieBuilder() *trieBuilder { return &trieBuilder{empty: true} }

// add files service id under text (already folded; reversed for a
// suffix trie), as a prefix or as the whole subject.
func (b *trieBuilder) add(text string, id int32, exact bool) {
	b.empty = false
	n := &b.root
	for i := 0; i < len(text); i++ {
		c := text[i]
		if n.kids == nil {
			n.kids = make(map[byte]*buildNode, 1)
		}
		k := n.kids[c]
		if k == nil {
			k = &buildNode{}
			n.kids[c] = k
		}
		n = k
	}
	if exact {
		n.exact = appendID(n.exact, id)
	} else {
		n.pre = appendID(n.pre, id)
	}
}

// appendID adds id to a list built in increasing id order, once.
func appendID(l []int32, id int32) []int32 {
	if len(l) > 0 && l[len(l)-1] == id {
		return l
	}
	return append(l, id)
}

// flatten turns the builder into a trie, breadth first.
func (b *trieBuilder) flatten() *trie {
	if b.empty {
		return nil
	}
	t := &trie{}
	queue := []*buildNode{&b.root}
	t.nodes = append(t.nodes, tnode{})
	for qi := 0; qi < len(queue); qi++ {
		n := queue[qi]
		nd := &t.nodes[qi]
		nd.pre, nd.npre = int32(len(t.ids)), int32(len(n.pre))
		t.ids = append(t.ids, n.pre...)
		nd.exact, nd.nex = int32(len(t.ids)), int32(len(n.exact))
		t.ids = append(t.ids, n.exact...)
		labels := make([]byte, 0, len(n.kids))
		for c := range n.kids {
			labels = append(labels, c)
		}
		slices.Sort(labels)
		nd.edge, nd.nedge = int32(len(t.labels)), int32(len(labels))
		for _, c := range labels {
			t.labels = append(t.labels, c)
			t.kids = append(t.kids, int32(len(queue)))
			queue = append(queue, n.kids[c])
			t.nodes = append(t.nodes, tnode{}) // nd is complete: moving it is harmless
		}
	}
	return t
}

// child is the node under n labelled c, or -1.
func (t *trie) child(n *tnode, c byte) int32 {
	lo, hi := n.edge, n.edge+n.nedge
	for hi-lo > 8 {
		mid := int32(uint32(lo+hi) >> 1)
		if t.labels[mid] < c {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	for ; lo < hi; lo++ {
		if l := t.labels[lo]; l == c {
			return t.kids[lo]
		} else if l > c {
			return -1
		}
	}
	return -1
}

// walk adds to it the lists of every key that fits s: the prefixes (or,
// reversed, the suffixes) of s, and the keys equal to s. It reports false
// when it ran out of room for lists.
func (t *trie) walk(s []byte, reversed bool, it *Iter) bool {
	n := &t.nodes[0]
	for i := 0; ; i++ {
		if n.npre > 0 && !it.add(t.ids[n.pre:n.pre+n.npre]) {
			return false
		}
		if i == len(s) {
			return n.nex == 0 || it.add(t.ids[n.exact:n.exact+n.nex])
		}
		c := s[i]
		if reversed {
			c = s[len(s)-1-i]
		}
		k := t.child(n, fold(c))
		if k < 0 {
			return true
		}
		n = &t.nodes[k]
	}
}
