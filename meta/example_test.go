package meta_test

import (
	"fmt"

	"github.com/apikit-dev/apikit/meta"
)

func ExampleParseLabelSelector() {
	sel, err := meta.ParseLabelSelector("tier in (web, cache), app = shop, !canary")
	if err != nil {
		panic(err)
	}
	fmt.Println(sel.String())
	fmt.Println(sel.Matches(meta.Set{"app": "shop", "tier": "web"}))
	fmt.Println(sel.Matches(meta.Set{"app": "shop", "tier": "web", "canary": "true"}))

	_, err = meta.ParseLabelSelector("app=-shop")
	fmt.Println(err != nil)
	// Output:
	// app=shop,!canary,tier in (cache,web)
	// true
	// false
	// true
}

func ExampleParseFieldSelector() {
	sel, err := meta.ParseFieldSelector(`spec.note=a\,b,metadata.name=x`)
	if err != nil {
		panic(err)
	}
	fmt.Println(sel.String())
	fmt.Println(sel.RequiresExactMatch("metadata.name"))
	fmt.Println(sel.Matches(meta.Set{"metadata.name": "x", "spec.note": "a,b"}))
	// Output:
	// metadata.name=x,spec.note=a\,b
	// x true
	// true
}

func ExampleLabelSelector_AsSelector() {
	ls := &meta.LabelSelector{
		MatchLabels:      map[string]string{"app": "shop"},
		MatchExpressions: []meta.LabelSelectorRequirement{{Key: "tier", Operator: meta.LabelSelectorOpNotIn, Values: []string{"db"}}},
	}
	sel, err := ls.AsSelector()
	if err != nil {
		panic(err)
	}
	fmt.Println(sel)

	var none *meta.LabelSelector
	nothing, _ := none.AsSelector()
	fmt.Println(nothing.Matches(meta.Set{}))
	// Output:
	// app=shop,tier notin (db)
	// false
}
