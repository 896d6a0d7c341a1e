package cel

import (
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"

	"github.com/apikit-dev/apikit/cel/library"
)

// Kubernetes' cost limits (k8s.io/apiserver/pkg/apis/cel and the
// apiextensions validation), in CEL cost units.
const (
	// PerCallLimit is the most one evaluation of one expression may cost.
	PerCallLimit = 1000000
	// RuntimeCELCostBudget is the most all rules may cost on one object.
	RuntimeCELCostBudget = 10000000
	// StaticEstimatedCostLimit is the most one rule may be estimated to
	// cost, times the number of times it may run on one object.
	StaticEstimatedCostLimit = 10000000
	// StaticEstimatedCRDCostLimit is the most all rules of a CRD's schema
	// may be estimated to cost together.
	StaticEstimatedCRDCostLimit = 100000000
	// CheckFrequency is how many comprehension iterations run between
	// checks for cancellation.
	CheckFrequency = 100
	// MaxRequestSizeBytes bounds, for estimates, values the schema leaves
	// unbounded.
	MaxRequestSizeBytes = 3 * 1024 * 1024
	// MaxEvaluatedMessageExpressionSizeBytes is the longest message a
	// messageExpression may produce.
	MaxEvaluatedMessageExpressionSizeBytes = 5 * 1024
)

// baseEnvOptions are kube-apiserver 1.37's base environment at its
// default compatibility version (1.36): every library and language option
// introduced up to then, but for its programs' options (BaseEnv adds
// them). Authorization selectors (fieldSelector and labelSelector on a
// resource check) are left out.
func baseEnvOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		library.URLs(),
		library.Regex(),
		library.Lists(),
		// cel-go 0.17.7 made has() cost 1; kube keeps it free.
		cel.CostEstimatorOptions(checker.PresenceTestHasCost(false)),
		// 1.27
		library.Authz(),
		// 1.28
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		library.Quantities(),
		// 1.29
		cel.ASTValidators(
			cel.ValidateDurationLiterals(),
			cel.ValidateTimestampLiterals(),
			cel.ValidateRegexLiterals(),
			cel.ValidateHomogeneousAggregateLiterals(),
		),
		ext.Strings(ext.StringsVersion(2)),
		ext.Sets(),
		// 1.30
		library.IPs(),
		library.CIDRs(),
		// 1.31
		library.Formats(),
		// 1.32
		ext.TwoVarComprehensions(),
		// 1.33
		library.Semvers(),
		// 1.34
		ext.Lists(ext.ListsVersion(3)),
	}
}

// programOptions are the options every program is built with: cost
// tracking with kube's estimator and the per-call limit.
func programOptions(limit uint64) []cel.ProgramOption {
	return []cel.ProgramOption{
		cel.EvalOptions(cel.OptOptimize, cel.OptTrackCost),
		cel.CostLimit(limit),
		cel.CostTrackerOptions(interpreter.PresenceTestHasCost(false)),
		cel.CostTracking(&library.CostEstimator{}),
		cel.InterruptCheckFrequency(CheckFrequency),
	}
}

// untrackedProgramOptions are those of a program whose cost cannot reach
// a limit (Expression.Untracked): optimized, checking for cancellation,
// without cel-go's cost observer around every step.
func untrackedProgramOptions() []cel.ProgramOption {
	return []cel.ProgramOption{
		cel.EvalOptions(cel.OptOptimize),
		cel.InterruptCheckFrequency(CheckFrequency),
	}
}

// programLib carries programOptions into every program of the base
// environment: each is optimized and tracks cost within the per-call
// limit, as kube's base environment's are.
type programLib struct{}

func (programLib) LibraryName() string                 { return "apikit.programs" }
func (programLib) CompileOptions() []cel.EnvOption     { return nil }
func (programLib) ProgramOptions() []cel.ProgramOption { return programOptions(PerCallLimit) }

// BaseEnv returns Kubernetes' base CEL environment, with no variables.
// It is built once; extend it, never change it.
func BaseEnv() (*cel.Env, error) { return baseEnv() }

var baseEnv = sync.OnceValues(func() (*cel.Env, error) {
	env, err := cel.NewEnv(append(baseEnvOptions(), cel.Lib(programLib{}))...)
	if err != nil {
		return nil, fmt.Errorf("cel: building the base environment: %w", err)
	}
	return env, nil
})

// untrackedBaseEnv is BaseEnv without its programs' options, which cannot
// be taken back once an environment has them (cel-go ORs evaluation
// options): the base of the programs Expression.Untracked builds.
var untrackedBaseEnv = sync.OnceValues(func() (*cel.Env, error) {
	env, err := cel.NewEnv(baseEnvOptions()...)
	if err != nil {
		return nil, fmt.Errorf("cel: building the untracked base environment: %w", err)
	}
	return env, nil
})
