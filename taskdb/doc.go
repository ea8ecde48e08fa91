// Package taskdb is the task store: the rows of every job, the source of
// truth behind the Redis index. It implements [timer.Store] on MySQL or
// MariaDB ([OpenMySQL]) and on SQLite ([OpenSQLite], the embedded
// default), holds all of toc's SQL, migrates its schema ([Store.Migrate])
// and translates driver errors into timer.ErrNotFound, timer.ErrConflict
// and timer.ErrInvalid.
//
// # Schema
//
// Tables are prefixed toc_. Every time is Unix milliseconds in a BIGINT.
//
//	toc_jobs                          one row per job
//	  job_id       BIGINT UNSIGNED    primary key; ids are below 2^63
//	  topic        VARCHAR(64)        compared bytewise (utf8mb4_bin)
//	  idem_key     VARBINARY(128)     NULL when the job has no key
//	  biz_id       BIGINT UNSIGNED    0 for none; the slot basis otherwise
//	  biz_type     BIGINT UNSIGNED    0 for none
//	  status       TINYINT UNSIGNED   see below
//	  action_time  BIGINT             when the job is due
//	  attempts     INT                dispatches made
//	  max_attempts INT
//	  last_error   VARCHAR(1024)      cut at a UTF-8 boundary
//	  callback     VARCHAR(2048)
//	  payload      MEDIUMBLOB         up to 64 KiB; NULL for a nil payload
//	  gmt_create   BIGINT
//	  gmt_modified BIGINT
//	  traceparent  VARCHAR(128)       W3C traceparent of the scheduling request; '' for none
//	  window_ms    BIGINT             flexible window after action_time; 0 for none
//	  concurrency_key VARBINARY(128)  '' for none (TEXT in SQLite)
//	  ck_held      VARBINARY(128)     VIRTUAL: the key while the row holds it (timer.HoldsKey), else NULL
//	  UNIQUE toc_jobs_ck_held      (topic, ck_held)    one holder per key (SQLite: a partial index)
//	  group_id     VARBINARY(120)     NULL when the job is in no group; qualified by namespace (timer.QualifiedGroupID)
//	  dead_topic   VARCHAR(64)        VIRTUAL: topic of a dead row, else NULL
//	  dead_at      BIGINT             VIRTUAL: gmt_modified of a dead row, else NULL
//	  group_status TINYINT UNSIGNED   VIRTUAL: status of a row in a group, else NULL
//	  ended_topic, ended_status, ended_at  VIRTUAL: topic, status and gmt_modified of a row that ended
//	                                   cancelled, dead, purged or expired, else NULL (a done row too: 0027);
//	                                   read only before 0032, which dropped their index
//	  UNIQUE toc_jobs_topic_key    (topic, idem_key)   NULLs never collide
//	  INDEX  toc_jobs_topic_due    (topic, status, action_time, job_id, biz_id, attempts, priority, window_ms):
//	                               a topic's jobs by status, counts, the backstop's scan (covered), and
//	                               the ended jobs but the dead past retention, by due time (a job ends at
//	                               or after it, but for a cancel, kept until its due time is past too);
//	                               the one index that holds status, so a completed job moves in one (0029
//	                               dropped toc_jobs_status_due: status, action_time, ...)
//	  INDEX  toc_jobs_topic_biz    (topic, biz_id, action_time, job_id): a business id's jobs
//	  INDEX  toc_jobs_group        (group_id, group_status): a group's counts, and whether it has a live member (SQLite: partial)
//
// The virtual columns keep completion cheap: a job that ends moves in the
// index that holds status, and they stay NULL for a row that is done, in
// no group, so its entry in toc_jobs_group never moves. Yet an index on
// virtual columns costs every UPDATE of a row, whichever columns it
// changes: toc_jobs_ended (ended_topic, ended_status, ended_at, job_id),
// by which the retirer found the ended jobs but the done and dead letters
// were listed, cost a fire 3.5 µs of MariaDB's CPU, and 0032 dropped it
// for toc_dead.
//
//	toc_dead                          one row per dead job (0031), written in the transaction that kills it
//	  topic, died_at, job_id          primary key: a page of a topic's dead letters by time of death, and
//	                                  the dead past retention; died_at is the row's gmt_modified
//	  INDEX  toc_dead_job (job_id)    the entry of a job replayed, purged or retired
//
//	toc_attempts                      one row per attempt that failed (and per attempt a build before 0033 made)
//	  job_id, attempt, started_at     primary key; INDEX toc_attempts_started (started_at) for pruning
//	toc_done_attempts                 the attempts that succeeded, packed: one row per done-update (0033, packs.go)
//	  done_at, first_job              primary key: the done time written into the rows' gmt_modified, the smallest id
//	  pack                            the entries: id, attempt, start, duration, status, error, excerpt
//
//	toc_groups                        one row per group (shard 0 when sharded)
//	  group_id   VARBINARY(120)       primary key; qualified by namespace (timer.QualifiedGroupID)
//	  sealed_at, completed_at BIGINT  0: not yet
//	  finished   TINYINT              1 once completed with its job recorded; (finished, group_id) feeds the sweep
//
//	toc_topics                        one row per topic
//	  name       VARCHAR(64)          primary key
//	  slots      INT                  fixed at creation
//	  gmt_create BIGINT
//
//	toc_schema_migrations             one row per applied migration
//	  version    INTEGER              primary key
//	  applied_at BIGINT
//
// MySQL tables are InnoDB in utf8mb4 with the binary collation, so text
// compares and sorts as in SQLite. SQLite tables are STRICT, and keep
// biz_id and biz_type as the same 64 bits in a signed INTEGER.
//
// # Status codes
//
// The column status holds [timer.Status]: 0 pending, 2 done, 3 cancelled,
// 4 dead. Code 1 is unused. Every change of a row is one UPDATE
// conditional on its current status (WHERE job_id = ? AND status = ?),
// which reports whether the row matched.
//
// # Backends
//
// MySQL and MariaDB go through go-sql-driver/mysql. OpenMySQL forces
// clientFoundRows (an UPDATE reports the rows it matched, not those it
// changed) and interpolateParams (one round trip per statement), and
// pools up to [DefaultMaxOpenConns] connections.
//
// SQLite goes through modernc.org/sqlite (pure Go), in WAL mode with a
// busy timeout, synchronous=FULL and foreign keys off. One connection
// writes, beginning its transactions with BEGIN IMMEDIATE, so concurrent
// writers queue in Go instead of failing with SQLITE_BUSY; a pool of
// read-only connections reads beside it.
//
// Both run the same Go code; a dialect value holds what differs (the
// placeholder limit, the topic upsert, the duplicate-key error codes, the
// migration lock). One conformance suite runs against both.
//
// # Files
//
// store.go holds Store, its Config and the helpers every query uses;
// jobs.go the job rows (insert, transitions, Complete, Get, GetMany,
// GetByKey); topics.go the topic rows; scans.go ScanPending and
// CountByStatus; forecast.go Forecast; mysql.go and sqlite.go open each backend and hold its
// dialect; migrate.go applies the migrations.
//
// # Migrations
//
// Migrations are numbered SQL files per dialect, embedded in the binary
// (migrations/mysql/0001_init.sql, migrations/sqlite/0001_init.sql).
// Migrate applies those not yet recorded in toc_schema_migrations, each in
// a transaction, under a lock (GET_LOCK on MySQL, the write lock on
// SQLite), so running it twice, or from two processes at once, is safe.
//
// # Indexes
//
// Every hot query is a lookup or a range scan: Get, GetMany, the
// conditional UPDATEs and Complete go by primary key; GetByKey by
// toc_jobs_topic_key; ScanPending walks toc_jobs_topic_due topic by
// topic, in order (keyset paging, no sort), and looks each topic up by
// primary key.
// EXPLAIN on MariaDB 10.11 over 5,000 jobs of mixed statuses, after
// ANALYZE TABLE:
//
//	query         table     type   key                   key_len  rows  Extra
//	Get           toc_jobs  const  PRIMARY               8        1
//	GetMany (3)   toc_jobs  range  PRIMARY               8        3     Using where
//	GetByKey      toc_jobs  const  toc_jobs_topic_key    389      1
//	ScanPending   toc_jobs  range  toc_jobs_topic_due                   Using where; Using index for group-by
//	 (3 queries)  j         range  toc_jobs_topic_due                   Using where; Using index
//	              t         eq_ref PRIMARY               258      1
//	Transition    toc_jobs  range  PRIMARY               8        1     Using where
//	Complete (3)  toc_jobs  range  PRIMARY               8        3     Using where
//	CountByStatus toc_jobs  ref    toc_jobs_topic_due    258      4921  Using where; Using index
//	ListDead      toc_dead  range  PRIMARY                              Using where; Using index
//	              toc_jobs  eq_ref PRIMARY               8        1     Using where
//	GroupLive     toc_jobs  ref    toc_jobs_group        105      1     Using where; Using index
//	Forecast      <derived2> ALL                                         Using temporary
//	              toc_jobs  range  toc_jobs_topic_due                    Using where; Using index
//
// and EXPLAIN QUERY PLAN on SQLite:
//
//	Get, GetMany, Transition, Complete  SEARCH toc_jobs USING INTEGER PRIMARY KEY (rowid=?)
//	GetByKey       SEARCH toc_jobs USING INDEX toc_jobs_topic_key (topic=? AND idem_key=?)
//	ScanPending    SEARCH toc_jobs USING COVERING INDEX toc_jobs_topic_due (topic=? AND status=? AND action_time>? AND action_time<?)
//	               SEARCH t USING PRIMARY KEY (name=?) LEFT-JOIN
//	CountByStatus  SEARCH toc_jobs USING COVERING INDEX toc_jobs_topic_due (topic=?)
//	ListDead       SEARCH toc_dead USING PRIMARY KEY (topic=? AND died_at>? AND died_at<?)
//	               SEARCH toc_jobs USING INTEGER PRIMARY KEY (rowid=?)
//	GroupLive      SEARCH toc_jobs USING INDEX toc_jobs_group (group_id=? AND group_status=?)
//	Forecast       SEARCH toc_jobs USING COVERING INDEX toc_jobs_topic_due (topic=? AND status=? AND action_time>? AND action_time<?)
//	               USE TEMP B-TREE FOR GROUP BY
//
// TestMariaDBExplain and TestSQLitePlans fail if a plan stops using its
// index.
package taskdb
