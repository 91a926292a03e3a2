package containers

import "github.com/vmcp-chaos/vmcp-chaos/internal/stableport"

// publishPort picks a free 127.0.0.1 port to publish a container port on,
// outside the kernel's ephemeral range (stableport). Docker releases a
// published port while its container is disconnected from the network (a
// partition) and binds it again on reconnect; a port from the ephemeral
// range was seen taken meanwhile, and the reconnect failed with "port is
// already allocated".
func publishPort() (int, error) { return stableport.Pick() }
