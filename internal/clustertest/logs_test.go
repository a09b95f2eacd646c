package clustertest

import "slices"

// percentile is the nearest-rank q-quantile (0 < q <= 1) of xs.
func percentile[T ~int64](xs []T, q float64) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(float64(len(s))*q+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}
