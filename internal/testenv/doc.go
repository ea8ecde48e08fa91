// Package testenv starts real redis-server, mariadbd, ZooKeeper and
// nats-server processes for integration tests, and gives a test a vhost of
// its own on the machine's RabbitMQ.
//
// Every server is started from a binary found on PATH, listens on a free
// loopback port (127.0.0.1 only) and keeps its data, logs and unix socket in
// a short temporary directory of its own under /tmp (unix socket paths must
// stay under ~107 bytes). Servers are started with os/exec, never daemonized,
// so the package can wait on them; on Linux they also get a parent-death
// signal, so they die with the test binary even when it panics or times out.
//
// # Shared and private servers
//
// [Redis], [MariaDB] and [ZooKeeper] return a server shared by every test of
// the package: it is started on first use and stopped by [Main], which the
// package must call from its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
//
// Shared servers are shared state: use unique keys, paths and databases
// ([MariaDBServer.NewDatabase]), or flush them ([RedisServer.FlushAll]) in
// tests that do not run in parallel. If a test killed a shared server and
// left it down, the next call to Redis, MariaDB or ZooKeeper starts it again.
//
// [NewRedis], [NewRedisWith], [NewMariaDB] and [NewZooKeeper] start a private
// server that the test's Cleanup stops and deletes; use them in tests that
// kill and restart a server. Kill sends SIGKILL and waits for the process to
// exit; Start brings the server back on the same port and data directory and
// returns once it answers (Redis: PING; MariaDB: SELECT 1 over TCP;
// ZooKeeper: "srvr" reports a Mode).
//
// [NATS] and [NewNATS] start a nats-server with JetStream whose streams
// survive a Kill and Start (they live in the server's dir).
//
// # Missing binaries
//
// When a binary is missing or a server fails to start, the test is skipped
// with a message naming what is missing. With TOC_REQUIRE_INTEGRATION=1 in
// the environment (see [Required]) the same conditions fail the test
// instead; CI sets it.
//
// # RabbitMQ
//
// [RabbitMQ] does not start a broker: it makes a vhost on the RabbitMQ
// that runs as a system service on 127.0.0.1:5672 (guest/guest), which the
// test's Cleanup deletes. [RabbitVHost.CloseConnections] closes the
// vhost's client connections, the way to test a lost connection without
// stopping a broker other tests share.
//
// Binaries used: redis-server; mariadb-install-db, mariadbd and the mariadb
// client; java and the ZooKeeper jars (Debian: /usr/share/java/zookeeper.jar,
// whose manifest names its dependencies, plus an slf4j binding; or an
// upstream distribution under $ZOOKEEPER_HOME); nats-server; rabbitmqctl.
//
// The package imports only the standard library.
package testenv
