package flowcontrol

import "github.com/apikit-dev/apikit/meta"

// DanglingCondition returns the Dangling condition of fs, given whether
// its priority level exists, with kube-apiserver's reasons and messages.
// Its LastTransitionTime is now unless the condition is unchanged from
// fs's, whose time it then keeps.
func DanglingCondition(fs *FlowSchema, levelExists bool, now meta.Time) FlowSchemaCondition {
	c := FlowSchemaCondition{Type: FlowSchemaConditionDangling, LastTransitionTime: now}
	name := fs.Spec.PriorityLevelConfiguration.Name
	if levelExists {
		c.Status, c.Reason = ConditionFalse, "Found"
		c.Message = "This FlowSchema references the PriorityLevelConfiguration object named \"" + name + "\" and it exists"
	} else {
		c.Status, c.Reason = ConditionTrue, "NotFound"
		c.Message = "This FlowSchema references the PriorityLevelConfiguration object named \"" + name + "\" but there is no such object"
	}
	for _, old := range fs.Status.Conditions {
		if old.Type == c.Type && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
	}
	return c
}

// SetFlowSchemaCondition replaces or adds c in fs's status; it reports
// whether anything changed.
func SetFlowSchemaCondition(fs *FlowSchema, c FlowSchemaCondition) bool {
	for i, old := range fs.Status.Conditions {
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
			return false
		}
		fs.Status.Conditions[i] = c
		return true
	}
	fs.Status.Conditions = append(fs.Status.Conditions, c)
	return true
}
