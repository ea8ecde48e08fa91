package luatest

import (
	"crypto/sha1"
	"encoding/hex"
)

// SHA1 returns the script cache id of src, as EVALSHA takes it.
func SHA1(src string) string {
	h := sha1.Sum([]byte(src))
	return hex.EncodeToString(h[:])
}
