package worker

import (
	"os"
	"strconv"
)

// defaultName is Config.Name's default: the host name and process id,
// which tell apart two workers on one machine and a restarted one.
func defaultName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "worker"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}
