package deadletter

import (
	"os"
	"testing"

	"github.com/toc-project/toc/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
