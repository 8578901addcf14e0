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
	// StreamedSummary returns Summary with zero Services (as many as
	// Summary has, so that every count and index is Summary's), and
	// the sequence of those services' Summary, in State's order: each
	// listener's, then the global ones. The value yielded is reused:
	// valid until the next one. The two are taken from the same
	// configuration.
	StreamedSummary() (*State, iter.Seq[*Service])
}

// summaryStream is a Summary whose services come from a sequence, each
// taken when its turn comes; without a SummaryStreamer, a plain
// Summary, whose services are taken from it in the same order.
type summaryStream struct {
	st   *State
	next func() (*Service, bool) // nil: st holds the services
	stop func()
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
	st, seq := s.StreamedSummary()
	next, stop := iter.Pull(seq)
	return &summaryStream{st: st, next: next, stop: stop}
}

// take returns the service at &svcs[i] when the State holds it, else the
// next one of the sequence, which must then be that one: the services
// are taken exactly once each, in State's order.
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
