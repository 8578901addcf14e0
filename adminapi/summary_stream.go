package adminapi

import "iter"

// SummaryStreamer is implemented by a Controller that can hand over a
// Summary's services one at a time, for the replies that print every
// service once and in order: the full Pound listing with
// ?sessions=count (lbctl list) and the metrics exposition. At 10,000
// services and 20,000 backends the State they were printed from was
// 17 MB built for each listing, live while the reply was encoded
// (issue 36).
type SummaryStreamer interface {
	// StreamedSummary returns Summary without its services (every
	// Services slice nil), how many services each listener and the
	// global list have, and the sequence of those services' Summary
	// in State's order: each listener's, then the global ones. The
	// value yielded is reused: valid until the next one. All three are
	// taken from the same configuration.
	StreamedSummary() (*State, ServiceCounts, iter.Seq[*Service])
}

// ServiceCounts are the number of services of each listener of a State
// (by State index) and of its global services.
type ServiceCounts struct {
	Listeners []int
	Global    int
}

// summaryStream is a Summary whose services come from a sequence, each
// taken when its turn comes; without a SummaryStreamer, a plain
// Summary, whose services are taken from it in the same order.
type summaryStream struct {
	st     *State
	counts ServiceCounts           // when streamed
	next   func() (*Service, bool) // nil: st holds the services
	stop   func()
}

// streamSummary takes the Summary of c, streamed when c can.
func streamSummary(c Controller) *summaryStream {
	s, ok := c.(SummaryStreamer)
	if !ok {
		return &summaryStream{st: summary(c)}
	}
	return pullSummary(s)
}

// pullSummary takes s's streamed Summary; close ends it.
func pullSummary(s SummaryStreamer) *summaryStream {
	st, counts, seq := s.StreamedSummary()
	next, stop := iter.Pull(seq)
	return &summaryStream{st: st, counts: counts, next: next, stop: stop}
}

// count is the number of services of State listener li (-1: the global
// ones), whose slice in the State is svcs.
func (s *summaryStream) count(li int, svcs []Service) int {
	switch {
	case s.next == nil:
		return len(svcs)
	case li < 0:
		return s.counts.Global
	case li < len(s.counts.Listeners):
		return s.counts.Listeners[li]
	}
	return 0
}

// total is the number of services of the streamed Summary (0 when st
// holds them).
func (s *summaryStream) total() int {
	n := s.counts.Global
	for _, c := range s.counts.Listeners {
		n += c
	}
	return n
}

// take returns the service at &svcs[i] when the State holds it, else the
// next one of the sequence, which must then be the i-th of its list:
// the services are taken exactly once each, in State's order.
func (s *summaryStream) take(svcs []Service, i int) *Service {
	if s.next == nil {
		return &svcs[i]
	}
	sv, ok := s.next()
	if !ok {
		// The State and the sequence come from one configuration:
		// running short means a caller took services out of order.
		panic("adminapi: streamed summary ended before its services")
	}
	return sv
}

// close ends the sequence (a listing may stop early on a refusal).
func (s *summaryStream) close() {
	if s.stop != nil {
		s.stop()
	}
}
