package lua

import (
	"os"
	"testing"

	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/lua/luatest"
)

func TestMain(m *testing.M) {
	luatest.GroupKeys(SlotGroups())
	os.Exit(testenv.Main(m))
}
