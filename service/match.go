package service

import (
	"lbd/http1"
)

// HeaderLine returns the header line "Name: value" as it was received, by
// locating the name and value slices in the head buffer they alias (their
// offset is the difference of capacities, so no copy and no unsafe).
func HeaderLine(head []byte, h *http1.Header) []byte {
	start := cap(head) - cap(h.Name)
	end := cap(head) - cap(h.Value) + len(h.Value)
	if start < 0 || end > len(head) || start > end {
		return h.Name
	}
	return head[start:end]
}
