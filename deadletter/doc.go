// Package deadletter reads and purges the jobs that exhausted their
// attempts: the Dead sets of a topic's slots in Redis.
//
// A job lands in its slot's Dead set when a retry or a sweep finds its
// attempts used up (see package prepare); the set is scored by the time it
// died and the attempts it made, and its member is the job id with the
// suffix of its priority (see package lua), which [Entry] reports. [Box]
// lists those jobs page by page across all slots of a topic, counts them,
// and purges one. [Letters] joins those entries with the job rows of the
// task store, for the API. Replaying a dead job is timer.Index.Revive, in
// package prepare.
package deadletter
