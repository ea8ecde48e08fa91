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
// Each slot has five sorted sets, a due set per priority (high, normal,
// low), Prepare and Dead, whose names share one hash tag,
// "{<topic>:<slot>}", so a script that touches them all stays inside one
// Redis Cluster slot:
//
//	<prefix>{<topic>:<slot>}:store:high
//	<prefix>{<topic>:<slot>}:store
//	<prefix>{<topic>:<slot>}:store:low
//	<prefix>{<topic>:<slot>}:prepare
//	<prefix>{<topic>:<slot>}:dead
//
// An empty set costs Redis nothing, so a topic without priorities keeps
// one due set a slot. The due sets keep the key names ":store…" of their
// older name, Store sets (see [KeySet]).
//
// [ClusterSlot] computes the cluster slot of a key as Redis does, so tests
// can check that invariant, which a single-node Redis does not enforce.
//
// # Ownership
//
// [Assign] maps every slot of every topic to one of a set of members with
// consistent hashing with bounded loads: no member above ceil(1.25 ×
// average), and close to the minimal share of slots moves when a member
// joins or leaves. It is deterministic: every process given the same
// members and topics computes the same map.
//
// [Cluster] runs the ZooKeeper side (go-zookeeper/zk) and implements
// timer.Assignment. Under its root znode:
//
//	members/m-<guid>-<seq>    ephemeral sequential, {"id","addr","capacity"}
//	election/n-<guid>-<seq>   ephemeral sequential; the lowest leads
//	assignment                written by the leader only: the sorted members,
//	                          the topic count and a SHA-256 digest of the topic
//	                          list, the load; its version is the assignment's
//	kick                      touched to make the leader re-read the topics
//
// The leader publishes the inputs of the map, not the map, so the znode
// stays small however many topics there are; each member reads the topics
// from the task store and computes the map once its digest matches. A
// member owns nothing from the moment it is disconnected from ZooKeeper,
// which is before its session can expire and its slots be given to
// another; after an expiry it registers anew. Around a membership change,
// two members at different assignment versions may both claim from a slot
// for a few milliseconds: harmless, because a claim in Redis is atomic and
// a leased job stays with its holder.
//
// # The parts of Cluster
//
// Each part has a file of its own:
//
//   - Configuration (cluster_config.go): [ClusterConfig], its defaults
//     and Validate.
//   - Membership (cluster_member.go): Run's loop of sessions. A session
//     connects, creates this member's ephemeral znodes (named with a GUID,
//     so a create whose reply was lost is found, not made twice), and ends
//     when ZooKeeper expires it; the next one registers anew. A member that
//     stops deletes its znodes, so its slots move at once.
//   - Election (cluster_elect.go): the ZooKeeper recipe; the lowest
//     election znode leads, every other member watches only the one just
//     before its own.
//   - Publication (cluster_publish.go): the format of the assignment znode
//     and the leader loop that rewrites it when the members or the topics'
//     digest change, each write conditional on the leader's election znode;
//     the kick znode through which any member makes it re-read the topics.
//   - Following (cluster_follow.go): every member re-reads the assignment
//     when its watch fires (re-arming it), derives the map from it and the
//     task store's topics, and reuses the map while the inputs stand.
//   - Fencing (cluster_fence.go): what Owned returns and the rules that set
//     it. Ownership is dropped in the client's callback the moment the
//     connection is lost, and a read begun before a session event is never
//     installed.
//   - Status (cluster_status.go): [Status], without I/O.
//   - Retries (cluster_retry.go): backoff with jitter, and the limit of one
//     warning per failing dependency per interval, which reports how many
//     it held back.
package slots
