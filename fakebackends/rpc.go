package fakebackends

import "github.com/vmcp-chaos/vmcp-chaos/faults"

// rpcMessage is what the fault engine needs to know of a JSON-RPC message.
type rpcMessage = faults.Message

func parseRPC(body []byte) rpcMessage { return faults.ParseMessage(body) }

// oversized builds a valid result whose text makes the body about size bytes.
func oversized(msg rpcMessage, size int64) []byte { return faults.Oversized(msg, size) }

// resetConn closes a connection so that the peer sees a TCP RST.
var resetConn = faults.ResetConn
