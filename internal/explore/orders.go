package explore

import (
	"strconv"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// keyOrder is the feature key of the orders of callbacks a history showed (coverage features carry the
// callback's coverage key instead).
const keyOrder = "order"

// Flags of an order feature: how two callbacks in a row relate.
const (
	orderSameReplica = 1 << iota // both ran on one replica (one process's memory)
	orderSameSession             // both concern one Session (or one operation)
)

// callToken is what one callback did, as order features see it: the callback, how it ended, its trigger or
// refresh flag, a boolean answer, and whether it asked for a user action. It holds no value the scenario
// chose (names, ids), so the same behaviour in another scenario gives the same token.
func callToken(c *simulate.CallRecord) string {
	t := string(c.Method) + ":" + string(c.Outcome)
	if c.Ctx.Trigger != "" {
		t += ":" + c.Ctx.Trigger
	}
	if c.Ctx.Refresh {
		t += ":refresh"
	}
	if c.Outcome == simulate.OutcomeReturned && simulate.KindBool.Of(c.Result) {
		t += ":" + strconv.FormatBool(c.Result.Value)
	}
	if c.Error != nil && c.Error.UserAction != nil {
		t += ":user_action"
	}
	return t
}

// orderFeatures are the pairs of callbacks one after the other in a history (AFL's edges, with callbacks for
// blocks, as protocol fuzzers such as AFLNet use the server's states): what the first did, what the next did,
// and whether they shared a replica and a Session. A seed that showed a rare order (two recovers answering
// True on one replica, a turn right after a state read there) is varied more, as one that reached a rare
// line is; what exploration reports as reached stays the provider's lines and branches.
func orderFeatures(h *simulate.History) map[feature]bool {
	out := map[feature]bool{}
	var prev *simulate.CallRecord
	for _, c := range h.Calls() {
		if c.Method == simulate.CallPlan {
			continue // every replica plans first, in any order
		}
		if prev != nil {
			flags := 0
			if prev.Replica == c.Replica {
				flags |= orderSameReplica
			}
			if (c.Ctx.Session != "" && prev.Ctx.Session == c.Ctx.Session) || (c.Ctx.Operation != "" && prev.Ctx.Operation == c.Ctx.Operation) {
				flags |= orderSameSession
			}
			out[feature{key: keyOrder, path: callToken(prev) + " > " + callToken(c), n: flags}] = true
		}
		prev = c
	}
	return out
}
