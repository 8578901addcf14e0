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

// buildNode is a trie node while keys are added. Its edges are kept in
// label order in a slice: most nodes have one (10,000 URL prefixes made
// ~40,000 nodes, each with a map of one entry before, issue 36).
type buildNode struct {
	edges      []buildEdge
	pre, exact []int32
}

type buildEdge struct {
	label byte
	node  *buildNode
}

type trieBuilder struct {
	root  buildNode
	empty bool
	nodes int // made under root: the flat trie's size
	// Nodes and first edges are carved from slabs: 10,000 URL prefixes
	// make ~40,000 nodes, nearly all with one edge, and as small objects
	// of their own they were 2 MB of garbage left among the small
	// objects the build keeps (issue 36).
	nodeSlab []buildNode
	edgeSlab []buildEdge
}

const builderSlab = 256

func newTrieBuilder() *trieBuilder { return &trieBuilder{empty: true} }

// kid returns n's child labelled c, adding it if there is none.
func (b *trieBuilder) kid(n *buildNode, c byte) *buildNode {
	i, found := slices.BinarySearchFunc(n.edges, c, func(e buildEdge, c byte) int { return int(e.label) - int(c) })
	if !found {
		e := buildEdge{c, b.newNode()}
		if n.edges == nil {
			n.edges = b.firstEdge(e)
		} else {
			n.edges = slices.Insert(n.edges, i, e)
		}
		b.nodes++
	}
	return n.edges[i].node
}

func (b *trieBuilder) newNode() *buildNode {
	if len(b.nodeSlab) == 0 {
		b.nodeSlab = make([]buildNode, builderSlab)
	}
	n := &b.nodeSlab[0]
	b.nodeSlab = b.nodeSlab[1:]
	return n
}

// firstEdge is a node's edge list of one, with no room to grow into the
// slab: a second edge moves the list out.
func (b *trieBuilder) firstEdge(e buildEdge) []buildEdge {
	if len(b.edgeSlab) == 0 {
		b.edgeSlab = make([]buildEdge, builderSlab)
	}
	l := b.edgeSlab[:1:1]
	b.edgeSlab = b.edgeSlab[1:]
	l[0] = e
	return l
}

// add files service id under text (already folded; reversed for a
// suffix trie), as a prefix or as the whole subject.
func (b *trieBuilder) add(text string, id int32, exact bool) {
	b.empty = false
	n := &b.root
	for i := 0; i < len(text); i++ {
		n = b.kid(n, text[i])
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

// flatten turns the builder into a trie, breadth first, each array made
// at its final size.
func (b *trieBuilder) flatten() *trie {
	if b.empty {
		return nil
	}
	t := &trie{nodes: make([]tnode, 1, b.nodes+1), labels: make([]byte, 0, b.nodes), kids: make([]int32, 0, b.nodes)}
	queue := make([]*buildNode, 1, b.nodes+1)
	queue[0] = &b.root
	for qi := 0; qi < len(queue); qi++ {
		n := queue[qi]
		nd := &t.nodes[qi]
		nd.pre, nd.npre = int32(len(t.ids)), int32(len(n.pre))
		t.ids = append(t.ids, n.pre...)
		nd.exact, nd.nex = int32(len(t.ids)), int32(len(n.exact))
		t.ids = append(t.ids, n.exact...)
		nd.edge, nd.nedge = int32(len(t.labels)), int32(len(n.edges))
		for _, e := range n.edges {
			t.labels = append(t.labels, e.label)
			t.kids = append(t.kids, int32(len(queue)))
			queue = append(queue, e.node)
			t.nodes = append(t.nodes, tnode{}) // within capacity: nd stays where it is
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
