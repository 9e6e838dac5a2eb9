package redisconn

import (
	"sync"

	"github.com/redis/go-redis/v9"
)

// LazyScript builds a Lua script on first use. Building hashes the source
// (EVALSHA needs its SHA1); doing that for every script at process start
// would cost every invocation, also of commands that never run a script.
func LazyScript(source func() string) func() *redis.Script {
	return sync.OnceValue(func() *redis.Script { return redis.NewScript(source()) })
}
