package config

import (
	"math"
	"sync"
	"sync/atomic"

	"lbd/parser"
)

// Locus is the text range of a statement (keyword to last argument, or to
// End for a block). It marshals as Pound's FILE:L.C-L.C so runtime messages
// (e.g. SocketFrom's "obtained address") can quote it.
//
// Every backend, service and condition of the model keeps one, so it is
// packed into 16 bytes (a parser.Span is 64: two file names and four
// ints; 2.6 MB at 10,000 services / 20,000 backends, issue 36): the files
// are numbers in a table of the process's file names, columns are 16
// bits. A span that does not fit (a column past 65,535, a 65,536th file
// name) is kept whole in a table of its own and the locus numbers it.
// The zero Locus is the zero span: no position.
type Locus struct {
	files   uint32 // start file << 16 | end file, indexes in locusFiles; wideFile: a wide span
	line    uint32 // start line; for a wide span, its index in locusWide
	endLine uint32
	cols    uint32 // start column << 16 | end column
}

// wideFile marks a Locus whose span is in locusWide.
const wideFile = 1<<16 - 1

// locusFiles numbers the file names loci name; 0 is "" (no file). The
// names are few (a configuration and its includes) and kept for the
// process's life, as is a wide span. Readers take the current names
// without a lock.
var locusFiles struct {
	mu    sync.Mutex
	index map[string]uint32
	names atomic.Pointer[[]string]
	wide  []parser.Span
	wides map[parser.Span]uint32
}

func init() {
	names := []string{""}
	locusFiles.names.Store(&names)
	locusFiles.index = map[string]uint32{"": 0}
}

// LocusOf packs a span.
func LocusOf(s parser.Span) Locus {
	sf, ef := fileNumber(s.Start.File), fileNumber(s.End.File)
	if sf >= wideFile || ef >= wideFile || !fits(s.Start) || !fits(s.End) {
		return wideLocus(s)
	}
	return Locus{
		files: sf<<16 | ef, line: uint32(s.Start.Line), endLine: uint32(s.End.Line),
		cols: uint32(s.Start.Col)<<16 | uint32(s.End.Col),
	}
}

func fits(p parser.Pos) bool {
	return p.Line >= 0 && uint64(p.Line) <= math.MaxUint32 && p.Col >= 0 && p.Col < 1<<16
}

// fileNumber is name's index in locusFiles, made the first time. The
// first few names are found without the lock: a load numbers a locus per
// statement, nearly all in one or two files.
func fileNumber(name string) uint32 {
	names := *locusFiles.names.Load()
	for i, have := range names[:min(len(names), 8)] {
		if have == name {
			return uint32(i)
		}
	}
	locusFiles.mu.Lock()
	defer locusFiles.mu.Unlock()
	if n, ok := locusFiles.index[name]; ok {
		return n
	}
	return addFile(name)
}

// addFile numbers a new file name; locusFiles.mu is held.
func addFile(name string) uint32 {
	names := *locusFiles.names.Load()
	n := uint32(len(names))
	if n >= wideFile {
		return wideFile
	}
	grown := append(names[:n:n], name)
	locusFiles.index[name] = n
	locusFiles.names.Store(&grown)
	return n
}

// wideLocus keeps s in the table of wide spans, once.
func wideLocus(s parser.Span) Locus {
	locusFiles.mu.Lock()
	defer locusFiles.mu.Unlock()
	n, ok := locusFiles.wides[s]
	if !ok {
		if locusFiles.wides == nil {
			locusFiles.wides = map[parser.Span]uint32{}
		}
		n = uint32(len(locusFiles.wide))
		locusFiles.wide = append(locusFiles.wide, s)
		locusFiles.wides[s] = n
	}
	return Locus{files: wideFile<<16 | wideFile, line: n}
}

// Span is the locus as the parser wrote it.
func (l Locus) Span() parser.Span {
	if l.files == wideFile<<16|wideFile {
		locusFiles.mu.Lock()
		defer locusFiles.mu.Unlock()
		return locusFiles.wide[l.line]
	}
	names := *locusFiles.names.Load()
	return parser.Span{
		Start: parser.Pos{File: names[l.files>>16], Line: int(l.line), Col: int(l.cols >> 16)},
		End:   parser.Pos{File: names[l.files&(1<<16-1)], Line: int(l.endLine), Col: int(l.cols & (1<<16 - 1))},
	}
}

// String formats the locus as Pound 4 does.
func (l Locus) String() string { return l.Span().String() }

// Line is the line the statement starts on, 0 when the position is unknown.
func (l Locus) Line() int { return l.Span().Start.Line }

// Point is where a statement starts: a Locus's file and line in 8 bytes,
// for what keeps only that (a backend's logger: 20,000 of them).
type Point struct {
	files uint32 // as Locus.files
	line  uint32 // as Locus.line
}

// Start is the point the locus starts at.
func (l Locus) Start() Point { return Point{files: l.files, line: l.line} }

// File is the point's file name, "" when unknown.
func (p Point) File() string { return p.locus().Span().Start.File }

// Line is the point's line, 0 when unknown.
func (p Point) Line() int { return p.locus().Span().Start.Line }

func (p Point) locus() Locus { return Locus{files: p.files, line: p.line} }
