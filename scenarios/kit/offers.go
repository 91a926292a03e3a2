package kit

import (
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// NotOffered returns why the gateway does not offer method to c ("" when
// it does): it did not advertise the method's capability (tools,
// resources, prompts) at initialize, or the target's profile leaves it
// out (methods). Checks on a method not offered are not applicable.
func (k *Kit) NotOffered(c *history.Client, method string) string {
	if why := targets.MethodsOf(k.Env.Target()).Lacks(method); why != "" {
		return why
	}
	if !c.Offers(method) {
		return "the gateway does not advertise " + family(method) + " at initialize"
	}
	return ""
}

// NotOfferedCall is NotOffered, plus a call the gateway answered -32601
// (method not found): it does not offer the method after all.
func (k *Kit) NotOfferedCall(c *history.Client, call *history.Call) string {
	if why := k.NotOffered(c, call.Method); why != "" {
		return why
	}
	if errors.Is(call.Err, mcp.ErrMethodNotFound) {
		return "the gateway answered " + call.Method + " with -32601 (method not found): it does not offer " + family(call.Method)
	}
	return ""
}

// family is "resources" of "resources/read".
func family(method string) string {
	for i := range method {
		if method[i] == '/' {
			return method[:i]
		}
	}
	return method
}
