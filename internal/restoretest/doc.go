// Package restoretest holds the process tests of restores from the bucket
// alone (package restore, issue 29): clusters of `shale serve` processes
// on one versitygw bucket, destroyed and rebuilt from it.
package restoretest
