package library

import (
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// Lists returns the list library: isSorted, sum, min, max, indexOf and
// lastIndexOf on lists.
func Lists() cel.EnvOption { return cel.Lib(listsLib{}) }

type listsLib struct{}

func (listsLib) LibraryName() string { return "k8s.lists" }

type namedType struct {
	name string
	t    *cel.Type
}

var (
	summable = []namedType{{"int", cel.IntType}, {"uint", cel.UintType}, {"double", cel.DoubleType}, {"duration", cel.DurationType}}
	zeroes   = map[string]ref.Val{"int": types.Int(0), "uint": types.Uint(0), "double": types.Double(0), "duration": types.Duration{}}
	ordered  = []namedType{
		{"int", cel.IntType}, {"uint", cel.UintType}, {"double", cel.DoubleType}, {"bool", cel.BoolType},
		{"duration", cel.DurationType}, {"timestamp", cel.TimestampType}, {"string", cel.StringType}, {"bytes", cel.BytesType},
	}
)

func (listsLib) CompileOptions() []cel.EnvOption {
	perType := func(ts []namedType, f func(n namedType) cel.FunctionOpt) []cel.FunctionOpt {
		out := make([]cel.FunctionOpt, len(ts))
		for i, t := range ts {
			out[i] = f(t)
		}
		return out
	}
	a := cel.TypeParamType("A")
	return []cel.EnvOption{
		cel.Function("isSorted", perType(ordered, func(n namedType) cel.FunctionOpt {
			return cel.MemberOverload(fmt.Sprintf("list_%s_is_sorted_bool", n.name),
				[]*cel.Type{cel.ListType(n.t)}, cel.BoolType, cel.UnaryBinding(isSorted))
		})...),
		cel.Function("sum", perType(summable, func(n namedType) cel.FunctionOpt {
			zero := zeroes[n.name]
			return cel.MemberOverload(fmt.Sprintf("list_%s_sum_%s", n.name, n.name),
				[]*cel.Type{cel.ListType(n.t)}, n.t, cel.UnaryBinding(func(l ref.Val) ref.Val { return sum(zero, l) }))
		})...),
		cel.Function("max", perType(ordered, func(n namedType) cel.FunctionOpt {
			return cel.MemberOverload(fmt.Sprintf("list_%s_max_%s", n.name, n.name),
				[]*cel.Type{cel.ListType(n.t)}, n.t, cel.UnaryBinding(func(l ref.Val) ref.Val { return extreme("max", types.IntNegOne, l) }))
		})...),
		cel.Function("min", perType(ordered, func(n namedType) cel.FunctionOpt {
			return cel.MemberOverload(fmt.Sprintf("list_%s_min_%s", n.name, n.name),
				[]*cel.Type{cel.ListType(n.t)}, n.t, cel.UnaryBinding(func(l ref.Val) ref.Val { return extreme("min", types.IntOne, l) }))
		})...),
		cel.Function("indexOf", cel.MemberOverload("list_a_index_of_int",
			[]*cel.Type{cel.ListType(a), a}, cel.IntType, cel.BinaryBinding(func(l, v ref.Val) ref.Val { return indexOf(l, v, false) }))),
		cel.Function("lastIndexOf", cel.MemberOverload("list_a_last_index_of_int",
			[]*cel.Type{cel.ListType(a), a}, cel.IntType, cel.BinaryBinding(func(l, v ref.Val) ref.Val { return indexOf(l, v, true) }))),
	}
}

func (listsLib) ProgramOptions() []cel.ProgramOption { return nil }

func isSorted(val ref.Val) ref.Val {
	it, ok := val.(traits.Iterable)
	if !ok {
		return types.MaybeNoSuchOverloadErr(val)
	}
	var prev traits.Comparer
	for i := it.Iterator(); i.HasNext() == types.True; {
		next := i.Next()
		c, ok := next.(traits.Comparer)
		if !ok {
			return types.MaybeNoSuchOverloadErr(next)
		}
		if prev != nil && prev.Compare(next) == types.IntOne {
			return types.False
		}
		prev = c
	}
	return types.True
}

func sum(zero, val ref.Val) ref.Val {
	it, ok := val.(traits.Iterable)
	if !ok {
		return types.MaybeNoSuchOverloadErr(val)
	}
	acc := zero
	for i := it.Iterator(); i.HasNext() == types.True; {
		next := i.Next()
		adder, ok := acc.(traits.Adder)
		if !ok {
			return types.MaybeNoSuchOverloadErr(acc)
		}
		acc = adder.Add(next)
		if types.IsError(acc) {
			return acc
		}
	}
	return acc
}

// extreme returns the element every other compares to as prefer says
// (-1: max, 1: min); an empty list is an error, as kube's.
func extreme(name string, prefer ref.Val, val ref.Val) ref.Val {
	it, ok := val.(traits.Iterable)
	if !ok {
		return types.MaybeNoSuchOverloadErr(val)
	}
	var best traits.Comparer
	for i := it.Iterator(); i.HasNext() == types.True; {
		next := i.Next()
		c, ok := next.(traits.Comparer)
		if !ok {
			return types.MaybeNoSuchOverloadErr(next)
		}
		if best == nil || best.Compare(next) == prefer {
			best = c
		}
	}
	if best == nil {
		return types.NewErr("%s called on empty list", name)
	}
	return best.(ref.Val)
}

func indexOf(list, item ref.Val, last bool) ref.Val {
	l, ok := list.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(list)
	}
	n := l.Size().(types.Int)
	for k := types.Int(0); k < n; k++ {
		i := k
		if last {
			i = n - 1 - k
		}
		if l.Get(i).Equal(item) == types.True {
			return i
		}
	}
	return types.Int(-1)
}
