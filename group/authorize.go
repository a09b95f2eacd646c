package group

import (
	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

// allowed reports whether req's principal may do op on res (Config.Authorizer;
// none allows everything). A denial is audited.
func (c *Coordinator) allowed(req *kafka.Request, op acl.Operation, res acl.Resource) bool {
	return c.cfg.Authorizer.Authorize(req, op, res)
}

// deniedTopics returns the topics that req's principal may not do op on,
// each checked (and a denial audited) once; nil when none is denied.
func (c *Coordinator) deniedTopics(req *kafka.Request, op acl.Operation, topics func(yield func(string) bool)) map[string]bool {
	if !c.cfg.Authorizer.Enabled() {
		return nil
	}
	var denied map[string]bool
	seen := map[string]bool{}
	for t := range topics {
		if seen[t] {
			continue
		}
		seen[t] = true
		if !c.allowed(req, op, acl.Topic(t)) {
			if denied == nil {
				denied = map[string]bool{}
			}
			denied[t] = true
		}
	}
	return denied
}
