package explain

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Write prints r for a person: one section per stage, the way the
// request would go through them.
func Write(w io.Writer, r *Route) error {
	p := &printer{w: bufio.NewWriter(w)}
	p.request(r)
	p.services(r)
	p.session(r.Session)
	p.balancer(r.Balancer)
	if b := r.Backend; b != nil {
		p.line("backend", fmt.Sprintf("%d %s (%s, via %s)", b.Index, b.Address, b.ID, b.Via))
	}
	if len(r.Rewrites) > 0 {
		p.line("rewrites", "the request rules of the listener and the service:")
		p.steps("  ", r.Rewrites)
	}
	p.forwarded(r.Forwarded)
	p.reply(r.Reply)
	p.line("outcome", r.Outcome)
	return p.w.Flush()
}

// printer's writes go through w, which keeps the first error for
// Write's Flush to return.
type printer struct{ w *bufio.Writer }

// line prints "label    text"; the label column is 10 wide.
func (p *printer) line(label, text string) {
	fmt.Fprintf(p.w, "%-10s%s\n", label, text)
}

// more prints a continuation line under the text column.
func (p *printer) more(text string) { fmt.Fprintf(p.w, "%10s%s\n", "", text) }

func (p *printer) request(r *Route) {
	q := r.Request
	p.line("request", strings.TrimSpace(fmt.Sprintf("%s %s %s from %s", q.Method, q.Target, q.Version, q.Client)))
	for _, h := range q.Headers {
		p.more(h)
	}
	l := r.Listener
	name := ""
	if l.Name != "" {
		name = " " + strconv.Quote(l.Name)
	}
	p.line("listener", fmt.Sprintf("%d%s %s (%s, %s dialect): %s", l.Index, name, l.Address, l.Protocol, l.Dialect, l.Why))
	for _, c := range r.Checks {
		text := "ok    " + c.Check
		if !c.OK {
			text = "FAILS " + c.Check
		}
		if c.Detail != "" {
			text += ": " + c.Detail
		}
		p.line("check", text)
	}
}

func (p *printer) services(r *Route) {
	if len(r.Services) == 0 {
		return
	}
	p.line("services", "tried in order:")
	for _, s := range r.Services {
		mark := "  "
		if r.Service != nil && *r.Service == s.Index {
			mark = "=>"
		}
		name := ""
		if s.Name != "" {
			name = " " + strconv.Quote(s.Name)
		}
		if s.Global {
			name += " (global)"
		}
		fmt.Fprintf(p.w, "%s %d%s at %s: %s\n", mark, s.Index, name, s.Pos, s.Verdict)
		if s.Skipped != "" {
			fmt.Fprintf(p.w, "      (%s)\n", s.Skipped)
		}
		if s.Verdict != "not tried" && s.Verdict != "disabled" && s.Verdict != "skipped" && len(s.Conditions) == 0 {
			fmt.Fprintf(p.w, "      (no conditions: matches every request)\n")
		}
		p.steps("      ", s.Conditions)
		if len(s.Rewrites) > 0 {
			fmt.Fprintf(p.w, "      its request rules run before the search goes on:\n")
			p.steps("        ", s.Rewrites)
		}
		if s.Error != "" {
			fmt.Fprintf(p.w, "      error: %s\n", s.Error)
		}
	}
}

// steps prints traced instructions, one per line.
func (p *printer) steps(indent string, steps []Step) {
	for _, s := range steps {
		if s.Action != "" {
			fmt.Fprintf(p.w, "%sdo    %s\n", indent, s.Action)
			continue
		}
		verdict := "fails"
		if s.Holds != nil && *s.Holds {
			verdict = "holds"
		}
		text := s.Test
		if s.Not {
			text = "not " + text
		}
		if s.Subject != nil {
			text += " on " + strconv.Quote(*s.Subject)
		}
		if s.Pos != "" {
			text += "  (" + s.Pos + ")"
		}
		fmt.Fprintf(p.w, "%s%s %s\n", indent, verdict, text)
		if s.Detail != "" {
			fmt.Fprintf(p.w, "%s      %s\n", indent, s.Detail)
		}
		if s.Error != "" {
			fmt.Fprintf(p.w, "%s      error: %s\n", indent, s.Error)
		}
		p.steps(indent+"      ", s.Eval)
	}
}

func (p *printer) session(s *Session) {
	if s == nil {
		return
	}
	what := s.Type
	if s.ID != "" {
		what += " " + strconv.Quote(s.ID)
	}
	if s.HasKey {
		what += " key " + strconv.Quote(s.Key)
	}
	p.line("session", what+": "+s.Why)
	switch {
	case s.Static:
		p.more("static session (never expires)")
	case s.Found:
		p.more("last seen " + s.LastSeen + ", expires " + s.Expires)
	}
}

func (p *printer) balancer(b *Balancer) {
	if b == nil {
		return
	}
	head := b.Algorithm + " (" + b.Mode + " mode"
	if b.Mode == "zproxy" {
		head += fmt.Sprintf(", service priority %d", b.ServicePriority)
	}
	head += "): "
	if b.Chosen != nil {
		head += fmt.Sprintf("backend %d", *b.Chosen)
	} else {
		head += "none"
	}
	p.line("balancer", head)
	p.more(b.Why)
	for _, g := range b.Groups {
		kind := fmt.Sprintf("group %d", g.Tier)
		if g.Emergency {
			kind = "emergency group"
		}
		fmt.Fprintf(p.w, "  %s: %s\n", kind, g.Why)
		for _, c := range g.Candidates {
			mark := "   "
			if b.Chosen != nil && *b.Chosen == c.Backend {
				mark = "=> "
			}
			fmt.Fprintf(p.w, "    %s%d %s  %s\n", mark, c.Backend, c.ID, candidateText(c))
		}
	}
}

// candidateText lists a candidate's inputs.
func candidateText(c Candidate) string {
	parts := []string{fmt.Sprintf("weight %d", c.Weight), fmt.Sprintf("priority %d", c.Priority),
		fmt.Sprintf("active %d", c.Active), fmt.Sprintf("pending %d", c.Pending)}
	if c.LatencyNS >= 0 {
		parts = append(parts, "latency "+time.Duration(c.LatencyNS).String())
	} else {
		parts = append(parts, "latency -")
	}
	if c.ConnLimit > 0 {
		parts = append(parts, fmt.Sprintf("conn limit %d", c.ConnLimit))
	}
	if c.Share > 0 {
		parts = append(parts, fmt.Sprintf("share %.1f%%", 100*c.Share))
	}
	if c.Score != "" {
		parts = append(parts, "score "+c.Score)
	}
	switch {
	case !c.Eligible:
		parts = append(parts, "NOT ELIGIBLE: "+c.Reason)
	case !c.Available:
		parts = append(parts, "not available: "+c.Reason)
	}
	return strings.Join(parts, ", ")
}

func (p *printer) forwarded(f *Forwarded) {
	if f == nil {
		return
	}
	p.line("forwarded", f.RequestLine)
	added := map[string]int{}
	for _, h := range f.Added {
		added[h]++
	}
	for _, h := range f.Headers {
		if added[h] > 0 {
			added[h]--
			p.more("+ " + h)
			continue
		}
		p.more("  " + h)
	}
	for _, h := range f.Removed {
		p.more("- " + h)
	}
}

func (p *printer) reply(r *Reply) {
	if r == nil {
		return
	}
	p.line("reply", fmt.Sprintf("%d (%s): %s", r.Status, r.Kind, r.Why))
	for _, h := range r.Head {
		p.more(h)
	}
}
