package library

import (
	"math"

	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// CostEstimator charges the library's calls as kube-apiserver does, both
// before evaluation (checker.CostEstimator) and during it
// (interpreter.ActualCostEstimator). Calls it does not know fall through to
// cel-go's own costs.
//
// Changing a cost changes which rules a CustomResourceDefinition may
// hold, so each figure here is kube's.
type CostEstimator struct {
	// SizeEstimator, when set, estimates the size of values whose size the
	// expression does not show, from the schema's maxLength, maxItems and
	// maxProperties.
	SizeEstimator checker.CostEstimator
}

func uptr(v uint64) *uint64 { return &v }

func stringCost(v ref.Val, factor float64) uint64 {
	return uint64(math.Ceil(float64(actualSize(v)) * factor * common.StringTraversalCostFactor))
}

// CallCost implements interpreter.ActualCostEstimator.
func (l *CostEstimator) CallCost(function, overloadID string, args []ref.Val, result ref.Val) *uint64 {
	switch function {
	case "check":
		return uptr(350000)
	case "serviceAccount", "path", "group", "resource", "subresource", "namespace", "name", "allowed", "reason", "error", "errored":
		return uptr(1)
	case "isSorted", "sum", "max", "min", "indexOf", "lastIndexOf", "includes":
		var c uint64
		if len(args) > 0 {
			c = traversalCost(args[0])
		}
		return &c
	case "url", "lowerAscii", "upperAscii", "substring", "trim", "jsonpatch.escapeKey":
		if len(args) >= 1 {
			return uptr(stringCost(args[0], 1))
		}
	case "replace", "split":
		if len(args) >= 1 {
			return uptr(stringCost(args[0], 2))
		}
	case "join":
		if len(args) >= 1 {
			return uptr(stringCost(result, 2))
		}
	case "find", "findAll":
		if len(args) >= 2 {
			str := uint64(math.Ceil((1.0 + float64(actualSize(args[0]))) * common.StringTraversalCostFactor))
			re := uint64(math.Ceil(float64(actualSize(args[1])) * common.RegexStringLengthCostFactor))
			return uptr(str * re)
		}
	case "cidr", "isIP", "isCIDR":
		if len(args) >= 1 {
			return uptr(stringCost(args[0], 1))
		}
	case "ip":
		if len(args) >= 1 {
			if overloadID == "cidr_ip" {
				return uptr(1)
			}
			return uptr(stringCost(args[0], 1))
		}
	case "ip.isCanonical":
		if len(args) >= 1 {
			return uptr(stringCost(args[0], 2))
		}
	case "masked", "prefixLength", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast":
		return uptr(1)
	case "containsIP":
		if len(args) >= 2 {
			cidrSize, otherSize := actualSize(args[0]), actualSize(args[1])
			c := uint64(math.Ceil(float64(cidrSize+cidrSize) * common.StringTraversalCostFactor))
			if overloadID == "cidr_contains_ip_string" {
				c += uint64(math.Ceil(float64(otherSize) * common.StringTraversalCostFactor))
			}
			return &c
		}
	case "containsCIDR":
		if len(args) >= 2 {
			cidrSize, otherSize := actualSize(args[0]), actualSize(args[1])
			c := uint64(math.Ceil(float64(cidrSize+cidrSize) * common.StringTraversalCostFactor))
			c += uint64(math.Ceil(float64(cidrSize)*common.StringTraversalCostFactor)) + 1
			if overloadID == "cidr_contains_cidr_string" {
				c += uint64(math.Ceil(float64(otherSize) * common.StringTraversalCostFactor))
			}
			return &c
		}
	case "quantity", "isQuantity", "semver", "isSemver":
		if len(args) >= 1 {
			return uptr(stringCost(args[0], 1))
		}
	case "validate":
		if len(args) >= 2 {
			if f, ok := args[0].(*Format); ok {
				str := uint64(math.Ceil((1.0 + float64(actualSize(args[1]))) * common.StringTraversalCostFactor))
				re := uint64(math.Ceil(float64(f.maxRegexSize) * common.RegexStringLengthCostFactor))
				return uptr(str * re)
			}
		}
	case "format.named":
		return uptr(1)
	case "sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan", "compareTo", "add", "sub",
		"major", "minor", "patch", "getScheme", "getHostname", "getHost", "getPort", "getEscapedPath", "getQuery":
		return uptr(1)
	case "_==_":
		if len(args) == 2 {
			switch args[0].(type) {
			case Quantity, IP, CIDR, *Format, URL, Semver,
				authorizerVal, pathCheckVal, groupCheckVal, resourceCheckVal, decisionVal:
				return uptr(1)
			}
		}
	}
	return nil
}

func fixed(c uint64) *checker.CallEstimate {
	return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: c, Max: c}}
}

// EstimateCallCost implements checker.CostEstimator.
func (l *CostEstimator) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	switch function {
	case "check":
		return fixed(350000)
	case "serviceAccount", "path", "group", "resource", "subresource", "namespace", "name", "allowed", "reason", "error", "errored":
		return fixed(1)
	case "isSorted", "sum", "max", "min", "indexOf", "lastIndexOf", "includes":
		if target != nil {
			el := checker.CostEstimate{Min: 1, Max: 1}
			if elNode := l.listElementNode(*target); elNode != nil {
				if k := elNode.Type().Kind(); k == types.StringKind || k == types.BytesKind {
					el = el.Add(l.sizeEstimate(elNode).MultiplyByCostFactor(common.StringTraversalCostFactor))
				}
				return &checker.CallEstimate{CostEstimate: l.sizeEstimate(*target).MultiplyByCost(el)}
			} else if function == "includes" {
				return &checker.CallEstimate{CostEstimate: l.sizeEstimate(*target).MultiplyByCost(el)}
			}
			// indexOf and lastIndexOf on a string.
			return &checker.CallEstimate{CostEstimate: l.sizeEstimate(*target).MultiplyByCostFactor(common.StringTraversalCostFactor)}
		}
	case "url", "jsonpatch.escapeKey":
		if len(args) == 1 {
			sz := l.sizeEstimate(args[0])
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(common.StringTraversalCostFactor), ResultSize: &sz}
		}
	case "lowerAscii", "upperAscii", "substring", "trim":
		if target != nil {
			sz := l.sizeEstimate(*target)
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(common.StringTraversalCostFactor), ResultSize: &sz}
		}
	case "replace":
		if target != nil && len(args) >= 2 {
			return l.replaceCost(*target, args)
		}
	case "split":
		if target != nil {
			sz := l.sizeEstimate(*target)
			// Worst case: a separator of "" splits every character, unless
			// a literal limit says otherwise.
			maxParts := sz.Max
			if len(args) > 1 {
				if v := args[1].Expr().AsLiteral(); v != nil {
					if i, ok := v.Value().(int64); ok {
						maxParts = uint64(i)
					}
				}
			}
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(2 * common.StringTraversalCostFactor),
				ResultSize: &checker.SizeEstimate{Min: 0, Max: maxParts}}
		}
	case "join":
		if target != nil {
			var sz checker.SizeEstimate
			listSize := l.sizeEstimate(*target)
			if elNode := l.listElementNode(*target); elNode != nil {
				sz = listSize.Multiply(l.sizeEstimate(elNode))
			}
			if len(args) > 0 {
				sep := l.sizeEstimate(args[0])
				var minSep, maxSep uint64
				if listSize.Min > 0 {
					minSep = listSize.Min - 1
				}
				if listSize.Max > 0 {
					maxSep = listSize.Max - 1
				}
				sz = sz.Add(sep.Multiply(checker.SizeEstimate{Min: minSep, Max: maxSep}))
			}
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(common.StringTraversalCostFactor), ResultSize: &sz}
		}
	case "find", "findAll":
		if target != nil && len(args) >= 1 {
			sz := l.sizeEstimate(*target)
			// One is added so an empty string still pays for an expensive regex.
			str := sz.Add(checker.SizeEstimate{Min: 1, Max: 1}).MultiplyByCostFactor(common.StringTraversalCostFactor)
			re := l.sizeEstimate(args[0]).MultiplyByCostFactor(common.RegexStringLengthCostFactor)
			return &checker.CallEstimate{CostEstimate: str.Multiply(re), ResultSize: &checker.SizeEstimate{Min: 0, Max: sz.Max}}
		}
	case "cidr", "isIP", "isCIDR", "quantity", "isQuantity", "semver", "isSemver":
		if len(args) >= 1 {
			return &checker.CallEstimate{CostEstimate: l.sizeEstimate(args[0]).MultiplyByCostFactor(common.StringTraversalCostFactor)}
		}
	case "ip":
		if overloadID == "cidr_ip" {
			return fixed(1)
		}
		if len(args) >= 1 {
			return &checker.CallEstimate{CostEstimate: l.sizeEstimate(args[0]).MultiplyByCostFactor(common.StringTraversalCostFactor)}
		}
	case "ip.isCanonical":
		if len(args) >= 1 {
			return &checker.CallEstimate{CostEstimate: l.sizeEstimate(args[0]).MultiplyByCostFactor(2 * common.StringTraversalCostFactor)}
		}
	case "masked", "prefixLength", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast":
		return fixed(1)
	case "containsIP", "containsCIDR":
		if len(args) >= 1 {
			// Two addresses of 4 or 16 bytes compared.
			sz := checker.SizeEstimate{Min: 4, Max: 16}
			c := sz.Add(sz).MultiplyByCostFactor(common.StringTraversalCostFactor)
			if function == "containsCIDR" {
				c = c.Add(sz.MultiplyByCostFactor(common.StringTraversalCostFactor)).Add(checker.CostEstimate{Min: 1, Max: 1})
			}
			if overloadID == "cidr_contains_ip_string" || overloadID == "cidr_contains_cidr_string" {
				c = c.Add(checker.CostEstimate(l.sizeEstimate(args[0])).MultiplyByCostFactor(common.StringTraversalCostFactor))
			}
			return &checker.CallEstimate{CostEstimate: c}
		}
	case "validate":
		if len(args) >= 1 {
			return &checker.CallEstimate{CostEstimate: l.sizeEstimate(args[0]).MultiplyByCostFactor(common.StringTraversalCostFactor).
				MultiplyByCostFactor(MaxNameFormatRegexSize * common.RegexStringLengthCostFactor)}
		}
	case "format.named":
		return fixed(1)
	case "sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan", "compareTo", "add", "sub",
		"major", "minor", "patch", "getScheme", "getHostname", "getHost", "getPort", "getEscapedPath", "getQuery":
		return fixed(1)
	case "_==_":
		if len(args) == 2 {
			return equalityEstimate(args[0], args[1])
		}
	}
	return nil
}

// maxFormatSize bounds a named format's name in equality estimates.
const maxFormatSize = 64

// equalityEstimate prices == on the library's types: constant for most,
// a format's name or a URL's length for those two, as kube does.
func equalityEstimate(lhs, rhs checker.AstNode) *checker.CallEstimate {
	t := lhs.Type()
	if t.Equal(rhs.Type()) != types.True {
		return nil
	}
	switch t.TypeName() {
	case IPType.TypeName(), CIDRType.TypeName(), QuantityType.TypeName(), SemverType.TypeName(),
		AuthorizerType.TypeName(), PathCheckType.TypeName(), GroupCheckType.TypeName(),
		ResourceCheckType.TypeName(), DecisionType.TypeName():
		return fixed(1)
	case FormatType.TypeName():
		return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: maxFormatSize}.MultiplyByCostFactor(common.StringTraversalCostFactor)}
	case URLType.TypeName():
		size := checker.SizeEstimate{Min: 1, Max: 1}
		// kube reads the right-hand size twice; the same here.
		if r := rhs.ComputedSize(); r != nil {
			size = r.Union(*r)
		}
		return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: size.Max}.MultiplyByCostFactor(common.StringTraversalCostFactor)}
	}
	return nil
}

func (l *CostEstimator) replaceCost(target checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	sz := l.sizeEstimate(target)
	from := l.sizeEstimate(args[0])
	with := l.sizeEstimate(args[1])
	var count, kept checker.SizeEstimate
	switch {
	case from.Min == 0:
		// Replacing "" surrounds every character.
		count.Max = sz.Max
		if sz.Max < math.MaxUint64 {
			count.Max++
		}
		kept.Max = sz.Max
	case with.Max <= from.Min:
		kept.Max = sz.Max
	default:
		count.Max = uint64(math.Ceil(float64(sz.Max) / float64(from.Min)))
	}
	switch {
	case from.Max == 0:
		count.Min = sz.Min
		if sz.Min < math.MaxUint64 {
			count.Min++
		}
		kept.Min = sz.Min
	case from.Max <= with.Min:
		kept.Min = sz.Min
	default:
		count.Min = uint64(math.Ceil(float64(sz.Min) / float64(from.Max)))
	}
	size := count.Multiply(with).Add(kept)
	return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(2 * common.StringTraversalCostFactor), ResultSize: &size}
}

func actualSize(v ref.Val) uint64 {
	if s, ok := v.(traits.Sizer); ok {
		if n, ok := s.Size().(types.Int); ok && n >= 0 {
			return uint64(n)
		}
	}
	return 1
}

func (l *CostEstimator) sizeEstimate(n checker.AstNode) checker.SizeEstimate {
	if sz := n.ComputedSize(); sz != nil {
		return *sz
	}
	if sz := l.EstimateSize(n); sz != nil {
		return *sz
	}
	return checker.SizeEstimate{Min: 0, Max: math.MaxUint64}
}

func (l *CostEstimator) listElementNode(list checker.AstNode) checker.AstNode {
	params := list.Type().Parameters()
	if len(params) == 0 {
		return nil
	}
	var path []string
	if p := list.Path(); p != nil {
		// A path lets the size estimator find the items' maxLength.
		path = append(append(make([]string, 0, len(p)+1), p...), "@items")
	}
	return &itemsNode{path: path, t: params[0]}
}

// EstimateSize implements checker.CostEstimator.
func (l *CostEstimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	if l.SizeEstimator != nil {
		return l.SizeEstimator.EstimateSize(n)
	}
	return nil
}

type itemsNode struct {
	path []string
	t    *types.Type
}

func (i *itemsNode) Path() []string                      { return i.path }
func (i *itemsNode) Type() *types.Type                   { return i.t }
func (i *itemsNode) Expr() ast.Expr                      { return nil }
func (i *itemsNode) ComputedSize() *checker.SizeEstimate { return nil }

// traversalCost is the cost of walking v as a data tree.
func traversalCost(v ref.Val) uint64 {
	switch vt := v.(type) {
	case types.String:
		return uint64(float64(len(string(vt))) * common.StringTraversalCostFactor)
	case types.Bytes:
		return uint64(float64(len([]byte(vt))) * common.StringTraversalCostFactor)
	case traits.Lister:
		var c uint64
		for it := vt.Iterator(); it.HasNext() == types.True; {
			c += traversalCost(it.Next())
		}
		return c
	case traits.Mapper:
		var c uint64
		for it := vt.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			c += traversalCost(k) + traversalCost(vt.Get(k))
		}
		return c
	default:
		return 1
	}
}
