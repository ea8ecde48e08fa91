// Package slots maps a job to its slot and a slot to its Redis keys.
//
// A topic is cut into a fixed, power-of-two number of slots. A job's slot
// is CRC32-IEEE of the decimal form of its basis (the caller's biz_id when
// given, else the job id) modulo the slot count, so every job of one
// business object lands in the same slot. The count is fixed when the topic
// is created: changing it would move almost every job to another slot.
//
// # Keys
//
// Each slot has three sorted sets, Store, Prepare and Dead, whose names
// share one hash tag, "{<topic>:<slot>}", so a script that touches all
// three stays inside one Redis Cluster slot:
//
//	<prefix>{<topic>:<slot>}:store
//	<prefix>{<topic>:<slot>}:prepare
//	<prefix>{<topic>:<slot>}:dead
//
// [ClusterSlot] computes the cluster slot of a key as Redis does, so tests
// can check that invariant, which a single-node Redis does not enforce.
//
// # Ownership
//
// Which worker owns which slot (ZooKeeper) is added to this package later,
// in its own file; nothing here depends on it.
package slots
