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
// introduced up to then. Authorization selectors (fieldSelector and
// labelSelector on a resource check) are left out.
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
		// Every program of the environment is optimized and tracks cost
		// within the per-call limit, as kube's base environment's are.
		cel.Lib(programLib{}),
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

// programLib carries programOptions into every program of the base
// environment.
type programLib struct{}

func (programLib) LibraryName() string                 { return "apikit.programs" }
func (programLib) CompileOptions() []cel.EnvOption     { return nil }
func (programLib) ProgramOptions() []cel.ProgramOption { return programOptions(PerCallLimit) }

var (
	baseOnce sync.Once
	baseEnv  *cel.Env
	baseErr  error
)

// BaseEnv returns Kubernetes' base CEL environment, with no variables.
// It is built once; extend it, never change it.
func BaseEnv() (*cel.Env, error) {
	baseOnce.Do(func() {
		baseEnv, baseErr = cel.NewEnv(baseEnvOptions()...)
		if baseErr != nil {
			baseErr = fmt.Errorf("cel: building the base environment: %w", baseErr)
		}
	})
	return baseEnv, baseErr
}
