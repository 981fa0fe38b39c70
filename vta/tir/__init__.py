"""TIR: the immutable intermediate representation, its traversals and generic passes."""

from .nodes import *  # noqa: F401,F403
from .nodes import __all__ as _nodes_all
from .functor import StmtExprMutator, StmtExprVisitor, post_order_visit, stmt_map, substitute
from . import printer  # noqa: F401  (installs the text form of PrimFunc: str(f))

__all__ = list(_nodes_all) + ["StmtExprMutator", "StmtExprVisitor", "post_order_visit", "stmt_map", "substitute"]
