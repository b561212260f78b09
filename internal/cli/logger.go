package cli

import (
	"io"
	"os"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// logTimeLayout is the daemons' log timestamp: RFC 3339 with
// milliseconds, so that the steps of a sub-second event (a failover, a
// migration) can be ordered across the components' logs.
const logTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// daemonLogger is the JSON logger of the long-running commands
// (controller, cluster-manager, node), on standard error.
func daemonLogger() logr.Logger { return jsonLogger(os.Stderr) }

func jsonLogger(w io.Writer) logr.Logger {
	return zap.New(zap.WriteTo(w), func(o *zap.Options) { o.TimeEncoder = zapcore.TimeEncoderOfLayout(logTimeLayout) })
}
