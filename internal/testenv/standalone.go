package testenv

import (
	"fmt"
	"regexp"
)

// The functions below start servers for a program that is not a test:
// toc bench, which measures toc on a stack of its own. The caller stops
// what it started with Stop, which also deletes the server's dir.

// StartRedis starts a private redis-server.
func StartRedis(opts RedisOptions) (*RedisServer, error) { return startRedis(opts) }

// StartMariaDB starts a private mariadbd (about a second and 100 MB).
func StartMariaDB() (*MariaDBServer, error) { return startMariaDB() }

var dbName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// CreateDatabase creates database name and returns its DSN (see DSN).
func (m *MariaDBServer) CreateDatabase(name string) (string, error) {
	if !dbName.MatchString(name) {
		return "", fmt.Errorf("database name %q: want ^[a-z][a-z0-9_]{0,63}$", name)
	}
	if _, err := m.run("-e", "CREATE DATABASE `"+name+"`"); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return m.DSN(name), nil
}

// StartRedisCluster starts a private Redis Cluster of three masters and
// three replicas (a few seconds).
func StartRedisCluster(opts RedisClusterOptions) (*RedisCluster, error) {
	return startRedisCluster(opts)
}

// StartNATS starts a nats-server with JetStream on a free loopback port
// outside a test (toc bench); Stop stops it and deletes its data.
func StartNATS() (*NATSServer, error) { return startNATS() }
