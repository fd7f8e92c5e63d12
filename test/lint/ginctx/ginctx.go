// Package ginctx is a vet check: a *gin.Context must not be used as a context.Context.
//
// gin pools its Context: as soon as a handler returns, the same value serves the next request.
// Code below the HTTP layer (the domain, the AWS SDK, pgx) may keep a context in a goroutine that
// outlives the request (a dial, a retry, a background send), and if that context is the pooled
// *gin.Context it then reads another request's values, deadline and cancellation: a data race
// the race detector saw in the SDK's dial goroutine. So handlers hand down
// c.Request.Context() (httpapi's and web's reqCtx), never c itself. This analyzer reports every
// place a *gin.Context is passed, assigned, returned or converted where a context.Context is
// expected. `make lint` runs it over the whole module through `go vet -vettool`.
package ginctx

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
)

// Analyzer reports a *gin.Context used as a context.Context.
var Analyzer = &analysis.Analyzer{
	Name:     "ginctx",
	Doc:      "reports a pooled *gin.Context used where a context.Context is expected (pass c.Request.Context())",
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      run,
}

const message = "a *gin.Context is used as a context.Context: gin reuses it for the next request once the handler returns; pass c.Request.Context()"

func run(pass *analysis.Pass) (any, error) {
	ins := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	// check reports e when it is a *gin.Context and want is context.Context.
	check := func(e ast.Expr, want types.Type) {
		if want != nil && isContext(want) && isGinContext(pass.TypesInfo.TypeOf(e)) {
			pass.Reportf(e.Pos(), message)
		}
	}
	var funcs []*types.Signature // enclosing function signatures, for return statements
	ins.Nodes([]ast.Node{(*ast.CallExpr)(nil), (*ast.AssignStmt)(nil), (*ast.ValueSpec)(nil),
		(*ast.ReturnStmt)(nil), (*ast.CompositeLit)(nil), (*ast.FuncDecl)(nil), (*ast.FuncLit)(nil)},
		func(n ast.Node, push bool) bool {
			switch n := n.(type) {
			case *ast.FuncDecl, *ast.FuncLit:
				if !push {
					funcs = funcs[:len(funcs)-1]
					return true
				}
				var sig *types.Signature
				if t, ok := pass.TypesInfo.TypeOf(funcExpr(n)).(*types.Signature); ok {
					sig = t
				}
				funcs = append(funcs, sig)
				return true
			}
			if !push {
				return true
			}
			switch n := n.(type) {
			case *ast.CallExpr:
				tv := pass.TypesInfo.Types[n.Fun]
				if tv.IsType() { // a conversion: context.Context(c)
					if len(n.Args) == 1 {
						check(n.Args[0], tv.Type)
					}
					return true
				}
				sig, ok := tv.Type.Underlying().(*types.Signature)
				if !ok {
					return true
				}
				for i, arg := range n.Args {
					check(arg, paramType(sig, i, n.Ellipsis.IsValid()))
				}
			case *ast.AssignStmt:
				if len(n.Lhs) == len(n.Rhs) {
					for i := range n.Lhs {
						check(n.Rhs[i], pass.TypesInfo.TypeOf(n.Lhs[i]))
					}
				}
			case *ast.ValueSpec:
				if n.Type != nil && len(n.Values) == len(n.Names) {
					for i := range n.Values {
						check(n.Values[i], pass.TypesInfo.TypeOf(n.Type))
					}
				}
			case *ast.ReturnStmt:
				if len(funcs) > 0 && funcs[len(funcs)-1] != nil {
					res := funcs[len(funcs)-1].Results()
					if res.Len() == len(n.Results) {
						for i, r := range n.Results {
							check(r, res.At(i).Type())
						}
					}
				}
			case *ast.CompositeLit:
				st, ok := pass.TypesInfo.TypeOf(n).Underlying().(*types.Struct)
				if !ok {
					return true
				}
				for i, elt := range n.Elts {
					if kv, ok := elt.(*ast.KeyValueExpr); ok {
						if id, ok := kv.Key.(*ast.Ident); ok {
							if f, ok := pass.TypesInfo.ObjectOf(id).(*types.Var); ok {
								check(kv.Value, f.Type())
							}
						}
					} else if i < st.NumFields() {
						check(elt, st.Field(i).Type())
					}
				}
			}
			return true
		})
	return nil, nil
}

func funcExpr(n ast.Node) ast.Expr {
	switch n := n.(type) {
	case *ast.FuncDecl:
		return n.Name
	case *ast.FuncLit:
		return n
	}
	return nil
}

// paramType is the type the i-th argument of a call to sig is assigned to.
func paramType(sig *types.Signature, i int, spread bool) types.Type {
	params := sig.Params()
	if sig.Variadic() && i >= params.Len()-1 {
		last := params.At(params.Len() - 1).Type()
		if spread {
			return last
		}
		if s, ok := last.(*types.Slice); ok {
			return s.Elem()
		}
		return nil
	}
	if i < params.Len() {
		return params.At(i).Type()
	}
	return nil
}

// isContext reports whether t is context.Context.
func isContext(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "context" && n.Obj().Name() == "Context"
}

// isGinContext reports whether t is *gin.Context.
func isGinContext(t types.Type) bool {
	p, ok := types.Unalias(t).(*types.Pointer)
	if !ok {
		return false
	}
	n, ok := types.Unalias(p.Elem()).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "github.com/gin-gonic/gin" && n.Obj().Name() == "Context"
}
