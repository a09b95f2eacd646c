// Package tiering copies closed segments of partition leaders to the object
// store and keeps the remote copy in line with retention (KIP-405's upload
// half): the Manager runs one loop per node that uploads every closed
// segment below the high watermark, commits its metadata
// (controlplane.RemoteLog, fenced by leader epoch), lets local retention
// delete what is committed, deletes remote segments past total retention,
// and reconciles the bucket against the metadata so no object outlives its
// record by more than the orphan grace period.
//
// It sits above segment, partition, controlplane and infra/objstore; the
// fetch path reads remote segments through the metadata and keys defined
// here.
package tiering
