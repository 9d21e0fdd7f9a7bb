"""An example pass package for tensorkiln: ``cancel-double-neg`` rewrites -(-x) to x."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern,
)
from xdsl.universe import Universe

from tensorkiln.dialects.graph.elementwise import NegOp


class CancelDoubleNeg(RewritePattern):
    """-(-x) -> x (the inner neg is left unused: run dce after this pass)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: NegOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if isinstance(inner, NegOp):
            rewriter.replace(op, [], [inner.input])


@dataclass(frozen=True)
class CancelDoubleNegPass(ModulePass):
    name = "cancel-double-neg"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(CancelDoubleNeg()).rewrite_module(op)


#: what the ``xdsl.universe`` entry point in pyproject.toml names
MY_UNIVERSE = Universe(all_passes={"cancel-double-neg": lambda: CancelDoubleNegPass})
