package prepare

import (
	"os"
	"testing"

	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/lua"
	"github.com/toc-project/toc/lua/luatest"
)

func TestMain(m *testing.M) {
	luatest.GroupKeys(lua.SlotGroups())
	os.Exit(testenv.Main(m))
}
