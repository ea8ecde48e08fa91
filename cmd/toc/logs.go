package main

import (
	"context"
	"fmt"
	stdlog "log"
	"log/slog"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
)

// Names of the dependencies, as /readyz and the "dep" attribute of log
// lines say them. The service's log handler limits warnings per message
// and dep (see rateLimited).
const (
	depTaskStore = "task_store"
	depRedis     = "redis"
	depZooKeeper = "zookeeper"
	// depClock is not a dependency but this member's clock, in /readyz:
	// not ready while it is off the task store's past --clock-tolerance.
	depClock = "clock"
)

// routeLibraryLogs sends what the libraries print through log, so that
// --log-format json gives only JSON lines and a failing dependency's
// repeats are limited like toc's own warnings: go-redis's messages (its
// pool's dial failures) and the MySQL driver's as warnings with their dep,
// and anything printed with the standard log package at Info (slog's
// default logger becomes log). The ZooKeeper client's go through the
// cluster's logger (slots), net/http servers' through their ErrorLog.
//
// It sets process-wide state, as the libraries only offer that; dev and
// serve call it once, at start.
func routeLibraryLogs(log *slog.Logger) {
	slog.SetDefault(log)
	redis.SetLogger(redisLogger{log.With("dep", depRedis)})
	mysql.SetLogger(mysqlLogger{log.With("dep", depTaskStore)})
}

// redisLogger is go-redis's internal.Logging over slog.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, "redis client", "detail", fmt.Sprintf(format, v...))
}

// mysqlLogger is the MySQL driver's Logger over slog.
type mysqlLogger struct{ log *slog.Logger }

func (l mysqlLogger) Print(v ...any) {
	l.log.Warn("mysql driver", "detail", fmt.Sprint(v...))
}

// errorLog is the ErrorLog of toc's net/http servers: their messages (a
// TLS handshake error, a panic in a handler) as warnings of log.
func errorLog(log *slog.Logger, server string) *stdlog.Logger {
	return slog.NewLogLogger(log.With("server", server).Handler(), slog.LevelWarn)
}
