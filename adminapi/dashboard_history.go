package adminapi

import (
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// GET api/history?since=MS&events=SEQ: the graph points newer than MS
// (all 15 minutes without it) and the timeline's events after SEQ,
// newest first. The page asks each second for what it lacks, so a poll
// carries one point per series, not the whole history.
type (
	dashHistory struct {
		NowMS    int64                 `json:"now_ms"`
		StepMS   int64                 `json:"step_ms"`
		Points   int                   `json:"points"`
		Series   map[string]dashSeries `json:"series"`
		Events   []Event               `json:"events"`
		Observed bool                  `json:"observed"`
	}
	// dashSeries is columnar: one array per measure, index-aligned.
	dashSeries struct {
		T      []int64   `json:"t"`
		RPS    []float64 `json:"rps"`
		EPS    []float64 `json:"eps"`
		Mean   []float64 `json:"mean_ms"`
		P50    []float64 `json:"p50_ms"`
		P99    []float64 `json:"p99_ms"`
		Active []float64 `json:"active"`
	}
)

// round3 keeps three decimals: the JSON of a float32 widened to float64
// would otherwise print a dozen meaningless digits per number.
func round3(f float32) float64 { return math.Round(float64(f)*1000) / 1000 }

func columns(ps []Point) dashSeries {
	n := len(ps)
	s := dashSeries{T: make([]int64, n), RPS: make([]float64, n), EPS: make([]float64, n),
		Mean: make([]float64, n), P50: make([]float64, n), P99: make([]float64, n), Active: make([]float64, n)}
	for i, p := range ps {
		s.T[i], s.RPS[i], s.EPS[i] = p.TimeMS, round3(p.RPS), round3(p.EPS)
		s.Mean[i], s.P50[i], s.P99[i], s.Active[i] = round3(p.MeanMS), round3(p.P50MS), round3(p.P99MS), round3(p.Active)
	}
	return s
}

// history is GET api/history.
func (d *dashboard) history(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeJSONError(w, http.StatusMethodNotAllowed, "api/history is read with GET")
		return
	}
	q := r.URL.Query()
	// Absent or malformed values mean "from the start": the page then
	// gets everything, which is always a correct answer.
	since, err := strconv.ParseInt(q.Get("since"), 10, 64)
	if err != nil {
		since = 0
	}
	seq, err := strconv.ParseUint(q.Get("events"), 10, 64)
	if err != nil {
		seq = 0
	}
	out := dashHistory{StepMS: historyStep.Milliseconds(), Points: HistoryLen,
		Series: map[string]dashSeries{}, Events: []Event{}}
	if o := observerOf(d.c); o != nil {
		out.Observed = true
		for k, ps := range o.HistoryOf(since, seriesOf(q)) {
			out.Series[k] = columns(ps)
		}
		if ev := o.Events.Since(seq); ev != nil {
			out.Events = ev
		}
	}
	out.NowMS = time.Now().UnixMilli()
	js, err := json.Marshal(out)
	if err != nil {
		writeJSONError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, js)
}

// seriesOf is the filter of api/history's services=K1,K2,... (a paged
// page asks for the series of the services it shows: service K and its
// backends, K/...; an empty list keeps none); nil, all series, without
// the parameter.
func seriesOf(q url.Values) func(string) bool {
	if !q.Has("services") {
		return nil
	}
	want := map[string]bool{}
	for _, k := range strings.Split(q.Get("services"), ",") {
		if k != "" {
			want[k] = true
		}
	}
	return func(key string) bool {
		// A service's key is "L/S", a backend's "L/S/ID".
		if i := strings.IndexByte(key, '/'); i >= 0 {
			if j := strings.IndexByte(key[i+1:], '/'); j >= 0 {
				key = key[:i+1+j]
			}
		}
		return want[key]
	}
}
