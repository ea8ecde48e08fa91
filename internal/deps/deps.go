package deps

import (
	_ "github.com/alicebob/miniredis/v2"
	_ "github.com/go-chi/chi/v5"
	_ "github.com/go-sql-driver/mysql"
	_ "github.com/go-zookeeper/zk"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/redis/go-redis/v9"
	_ "github.com/standard-webhooks/standard-webhooks/libraries/go"
	_ "modernc.org/sqlite"
)
