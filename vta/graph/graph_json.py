"""Reading TVM's graph JSON as :func:`vta.graph.compile` writes it (and ``export_library`` stores it).

Every level of the document accepts the keys the writer (:mod:`vta.graph.lower`) produces and
refuses any other with :class:`GraphJSONError`, naming the key and the closest accepted one: a
misspelt ``"storage_id"`` or ``"func_nmae"`` would otherwise be read as absent and the graph run
with a default. The ``host_attrs`` of a CPU node (its operator's attributes, as JSON text) must
name attributes of its ``host_kernel``.
"""

from __future__ import annotations

import json
from typing import Any

from ..env import check_keys
from ..errors import ConfigError, GraphError
from .opdefs import op_def

__all__ = ["GraphJSONError", "GRAPH_KEYS", "GRAPH_ATTR_KEYS", "NODE_KEYS", "NODE_ATTR_KEYS", "load_graph_json",
           "node_host_attrs"]

#: Keys of the document.
GRAPH_KEYS = ("nodes", "arg_nodes", "node_row_ptr", "heads", "attrs")
#: Keys of the document's ``attrs``.
GRAPH_ATTR_KEYS = ("shape", "dltype", "storage_id")
#: Keys of a node.
NODE_KEYS = ("op", "name", "inputs", "attrs")
#: Keys of an operator node's ``attrs``: TVM's, the host kernel's, and the placement and report
#: facts :func:`vta.graph.lower` adds.
NODE_ATTR_KEYS = ("func_name", "num_inputs", "num_outputs", "flatten_data", "host_kernel", "host_attrs", "device",
                  "reason", "op", "layer", "macs", "func_out_shape")


class GraphJSONError(GraphError, ConfigError):
    """A graph JSON document is malformed or holds a key its level does not accept (the message
    names the key, where it is, and the closest accepted key)."""


def _object(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise GraphJSONError(f"{where} must be a JSON object, got {type(value).__name__}")
    return value


def _head(text: Any) -> str:
    return repr(text[:60]) + ("..." if len(text) > 60 else "") if isinstance(text, (str, bytes)) else repr(text)


def node_host_attrs(node: dict, where: str = "graph JSON") -> dict:
    """The decoded ``host_attrs`` of an operator node (``{}`` when it has none).

    Raises
    ------
    GraphJSONError
        If they are not a JSON object, or name an attribute its ``host_kernel`` does not have.
    """
    attrs = node.get("attrs") or {}
    text = attrs.get("host_attrs")
    if text is None:
        return {}
    label = f"{where}: node {node.get('name')!r} host_attrs"
    try:
        decoded = json.loads(text) if isinstance(text, (str, bytes)) else text
    except ValueError as exc:
        raise GraphJSONError(f"{label} is not valid JSON: {exc}") from exc
    decoded = _object(decoded, label)
    kernel = attrs.get("host_kernel", attrs.get("op"))  # the kernel the executor runs
    definition = op_def(kernel) if isinstance(kernel, str) else None
    if definition is not None:
        check_keys(decoded, definition.defaults, f"{label} (attributes of {kernel})", GraphJSONError)
    return decoded


def load_graph_json(text: str | bytes, where: str = "graph JSON") -> dict:
    """Parse a graph JSON document and check the keys of every level.

    Parameters
    ----------
    text : str or bytes
        The document.
    where : str
        What it is, for messages.

    Returns
    -------
    dict
        The document.

    Raises
    ------
    GraphJSONError
        If it is not a JSON object, or a level holds a key it does not accept (the document, its
        ``attrs``, a node, a node's ``attrs`` or ``host_attrs``).
    """
    try:
        doc = json.loads(text)
    except (ValueError, TypeError) as exc:
        raise GraphJSONError(f"{where} is not valid JSON ({exc}): {_head(text)}") from exc
    except RecursionError:
        raise GraphJSONError(f"{where} nests JSON too deeply") from None
    if not isinstance(doc, dict):
        raise GraphJSONError(f"{where} must be a graph executor JSON object with a 'nodes' list, got "
                             f"{type(doc).__name__}: {_head(text)}")
    check_keys(doc, GRAPH_KEYS, where, GraphJSONError)
    check_keys(_object(doc.get("attrs", {}), f"{where}: attrs"), GRAPH_ATTR_KEYS, f"{where}: attrs", GraphJSONError)
    nodes = doc.get("nodes", [])
    if not isinstance(nodes, list):
        raise GraphJSONError(f"{where}: nodes must be a JSON list, got {type(nodes).__name__}")
    for i, node in enumerate(nodes):
        label = f"{where}: node {i}"
        check_keys(_object(node, label), NODE_KEYS, label, GraphJSONError)
        label = f"{where}: node {i} ({node.get('name')!r})"
        check_keys(_object(node.get("attrs", {}), f"{label} attrs"), NODE_ATTR_KEYS, f"{label} attrs",
                   GraphJSONError)
        node_host_attrs(node, where)
    return doc
