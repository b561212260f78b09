package zone

// PlanWholeOnly makes r plan every network whole, remote nodes' changes
// included (on), or in parts again (off): benchmarks compare the two.
func PlanWholeOnly(r *Reconciler, on bool) { r.whole.off.Store(on) }

// Resyncs is how many periodic resyncs r has requested.
func Resyncs(r *Reconciler) int64 { return r.resyncs.Load() }

// WholePlans is how many times r planned a network whole.
func WholePlans(r *Reconciler) int64 { return r.wholePlans.Load() }
