package flowcontrol

import (
	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
)

// Names of Kubernetes' system users and groups the default configuration
// refers to.
const (
	nodesGroup            = "system:nodes"
	kubeControllerManager = "system:kube-controller-manager"
	kubeScheduler         = "system:kube-scheduler"
	namespaceSystem       = "kube-system"
	allAuthenticated      = "system:authenticated"
	allUnauthenticated    = "system:unauthenticated"
	systemPrivilegedGroup = "system:masters"
)

// MandatoryPriorityLevels returns the priority levels every server has:
// exempt and catch-all. The server restores them when they are deleted and
// keeps their spec as it is here. Each call returns new objects.
func MandatoryPriorityLevels() []*PriorityLevelConfiguration {
	return []*PriorityLevelConfiguration{
		newPriorityLevel(PriorityLevelExempt, PriorityLevelConfigurationSpec{
			Type:   PriorityLevelEnablementExempt,
			Exempt: &ExemptPriorityLevelConfiguration{NominalConcurrencyShares: int32Ptr(0), LendablePercent: int32Ptr(0)},
		}),
		newPriorityLevel(PriorityLevelCatchAll, PriorityLevelConfigurationSpec{
			Type: PriorityLevelEnablementLimited,
			Limited: &LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: int32Ptr(5),
				LendablePercent:          int32Ptr(0),
				LimitResponse:            LimitResponse{Type: LimitResponseTypeReject},
			},
		}),
	}
}

// MandatoryFlowSchemas returns the flow schemas every server has: exempt
// (system:masters) and catch-all.
func MandatoryFlowSchemas() []*FlowSchema {
	return []*FlowSchema{
		newFlowSchema(FlowSchemaExempt, PriorityLevelExempt, 1, "",
			PolicyRulesWithSubjects{
				Subjects:         groups(systemPrivilegedGroup),
				ResourceRules:    []ResourcePolicyRule{resourceRuleAll()},
				NonResourceRules: []NonResourcePolicyRule{nonResourceRuleAll()},
			}),
		newFlowSchema(FlowSchemaCatchAll, PriorityLevelCatchAll, 10000, FlowDistinguisherMethodByUser,
			PolicyRulesWithSubjects{
				Subjects:         groups(allUnauthenticated, allAuthenticated),
				ResourceRules:    []ResourcePolicyRule{resourceRuleAll()},
				NonResourceRules: []NonResourcePolicyRule{nonResourceRuleAll()},
			}),
	}
}

// SuggestedPriorityLevels returns the priority levels kube-apiserver
// suggests: created when missing, kept up to date while their
// apf.kubernetes.io/autoupdate-spec annotation is "true", left alone when
// an operator set it to "false".
func SuggestedPriorityLevels() []*PriorityLevelConfiguration {
	limited := func(shares, lendable, queues, handSize, queueLength int32) PriorityLevelConfigurationSpec {
		return PriorityLevelConfigurationSpec{
			Type: PriorityLevelEnablementLimited,
			Limited: &LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: int32Ptr(shares),
				LendablePercent:          int32Ptr(lendable),
				LimitResponse: LimitResponse{
					Type:    LimitResponseTypeQueue,
					Queuing: &QueuingConfiguration{Queues: queues, HandSize: handSize, QueueLengthLimit: queueLength},
				},
			},
		}
	}
	return []*PriorityLevelConfiguration{
		// Components that keep the cluster and its running pods alive.
		newPriorityLevel("system", limited(30, 33, 64, 6, 50)),
		// Node health reporting, apart from "system" so that nodes can
		// report while pods start.
		newPriorityLevel("node-high", limited(40, 25, 64, 6, 50)),
		// Controllers' leader election.
		newPriorityLevel("leader-election", limited(10, 0, 16, 4, 50)),
		// Important workloads: the scheduler, built-in controllers.
		newPriorityLevel("workload-high", limited(40, 50, 128, 6, 50)),
		// Service accounts' workloads.
		newPriorityLevel("workload-low", limited(100, 90, 128, 6, 50)),
		// Everything else: every authenticated user lands here.
		newPriorityLevel("global-default", limited(20, 50, 128, 6, 50)),
	}
}

// SuggestedFlowSchemas returns the flow schemas kube-apiserver suggests.
func SuggestedFlowSchemas() []*FlowSchema {
	all := func(subjects ...Subject) PolicyRulesWithSubjects {
		return PolicyRulesWithSubjects{
			Subjects:         subjects,
			ResourceRules:    []ResourcePolicyRule{resourceRuleAll()},
			NonResourceRules: []NonResourcePolicyRule{nonResourceRuleAll()},
		}
	}
	leaderElection := func(coreNamespace string, subjects ...Subject) PolicyRulesWithSubjects {
		return PolicyRulesWithSubjects{
			Subjects: subjects,
			ResourceRules: []ResourcePolicyRule{
				{Verbs: []string{"get", "create", "update"}, APIGroups: []string{""}, Resources: []string{"endpoints", "configmaps"}, Namespaces: []string{coreNamespace}},
				{Verbs: []string{"get", "create", "update"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Namespaces: []string{NamespaceEvery}},
			},
		}
	}
	return []*FlowSchema{
		newFlowSchema("system-nodes", "system", 500, FlowDistinguisherMethodByUser, all(groups(nodesGroup)...)),
		newFlowSchema("system-node-high", "node-high", 400, FlowDistinguisherMethodByUser, PolicyRulesWithSubjects{
			Subjects: groups(nodesGroup),
			ResourceRules: []ResourcePolicyRule{
				{Verbs: []string{VerbAll}, APIGroups: []string{""}, Resources: []string{"nodes", "nodes/status"}, ClusterScope: true, Namespaces: []string{NamespaceEvery}},
				{Verbs: []string{VerbAll}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Namespaces: []string{NamespaceEvery}},
			},
		}),
		newFlowSchema("probes", PriorityLevelExempt, 2, "", PolicyRulesWithSubjects{
			Subjects: groups(allUnauthenticated, allAuthenticated),
			NonResourceRules: []NonResourcePolicyRule{
				{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/readyz", "/livez"}},
			},
		}),
		newFlowSchema("system-leader-election", "leader-election", 100, FlowDistinguisherMethodByUser,
			leaderElection(namespaceSystem, append(users(kubeControllerManager, kubeScheduler), kubeSystemServiceAccounts(NameAll)...)...)),
		newFlowSchema("endpoint-controller", "workload-high", 150, FlowDistinguisherMethodByUser, PolicyRulesWithSubjects{
			Subjects: append(users(kubeControllerManager), kubeSystemServiceAccounts("endpoint-controller", "endpointslicemirroring-controller")...),
			ResourceRules: []ResourcePolicyRule{
				{Verbs: []string{"get", "create", "update"}, APIGroups: []string{""}, Resources: []string{"endpoints"}, Namespaces: []string{NamespaceEvery}},
			},
		}),
		newFlowSchema("workload-leader-election", "leader-election", 200, FlowDistinguisherMethodByUser,
			leaderElection(NamespaceEvery, kubeSystemServiceAccounts(NameAll)...)),
		newFlowSchema("kube-controller-manager", "workload-high", 800, FlowDistinguisherMethodByNamespace, all(users(kubeControllerManager)...)),
		newFlowSchema("kube-scheduler", "workload-high", 800, FlowDistinguisherMethodByNamespace, all(users(kubeScheduler)...)),
		newFlowSchema("kube-system-service-accounts", "workload-high", 900, FlowDistinguisherMethodByNamespace, all(kubeSystemServiceAccounts(NameAll)...)),
		newFlowSchema("service-accounts", "workload-low", 9000, FlowDistinguisherMethodByUser, all(groups(authn.AllServiceAccountsGroup)...)),
		newFlowSchema("global-default", "global-default", 9900, FlowDistinguisherMethodByUser, all(groups(allUnauthenticated, allAuthenticated)...)),
	}
}

// DefaultConfiguration returns the whole default configuration, mandatory
// and suggested: what a server applies before it has read any object.
func DefaultConfiguration() ([]*FlowSchema, []*PriorityLevelConfiguration) {
	return append(MandatoryFlowSchemas(), SuggestedFlowSchemas()...),
		append(MandatoryPriorityLevels(), SuggestedPriorityLevels()...)
}

func newPriorityLevel(name string, spec PriorityLevelConfigurationSpec) *PriorityLevelConfiguration {
	return &PriorityLevelConfiguration{
		TypeMeta:   meta.TypeMeta{APIVersion: GroupName + "/" + Version, Kind: "PriorityLevelConfiguration"},
		ObjectMeta: meta.ObjectMeta{Name: name, Annotations: map[string]string{AutoUpdateAnnotation: "true"}},
		Spec:       spec,
	}
}

func newFlowSchema(name, level string, precedence int32, dm FlowDistinguisherMethodType, rules ...PolicyRulesWithSubjects) *FlowSchema {
	var method *FlowDistinguisherMethod
	if dm != "" {
		method = &FlowDistinguisherMethod{Type: dm}
	}
	return &FlowSchema{
		TypeMeta:   meta.TypeMeta{APIVersion: GroupName + "/" + Version, Kind: "FlowSchema"},
		ObjectMeta: meta.ObjectMeta{Name: name, Annotations: map[string]string{AutoUpdateAnnotation: "true"}},
		Spec: FlowSchemaSpec{
			PriorityLevelConfiguration: PriorityLevelConfigurationReference{Name: level},
			MatchingPrecedence:         precedence,
			DistinguisherMethod:        method,
			Rules:                      rules,
		},
	}
}

func resourceRuleAll() ResourcePolicyRule {
	return ResourcePolicyRule{Verbs: []string{VerbAll}, APIGroups: []string{APIGroupAll}, Resources: []string{ResourceAll},
		ClusterScope: true, Namespaces: []string{NamespaceEvery}}
}

func nonResourceRuleAll() NonResourcePolicyRule {
	return NonResourcePolicyRule{Verbs: []string{VerbAll}, NonResourceURLs: []string{NonResourceAll}}
}

func groups(names ...string) []Subject {
	out := make([]Subject, len(names))
	for i, n := range names {
		out[i] = Subject{Kind: SubjectKindGroup, Group: &GroupSubject{Name: n}}
	}
	return out
}

func users(names ...string) []Subject {
	out := make([]Subject, len(names))
	for i, n := range names {
		out[i] = Subject{Kind: SubjectKindUser, User: &UserSubject{Name: n}}
	}
	return out
}

func kubeSystemServiceAccounts(names ...string) []Subject {
	out := make([]Subject, len(names))
	for i, n := range names {
		out[i] = Subject{Kind: SubjectKindServiceAccount, ServiceAccount: &ServiceAccountSubject{Namespace: namespaceSystem, Name: n}}
	}
	return out
}
