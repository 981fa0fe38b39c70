"""Target descriptions as VTA code writes them (TVM's ``tvm.target``, re-exported by ``vta.tvm``).

Only two kinds matter to VTA programs: ``ext_dev`` (the accelerator; its code runs through the
VTA runtime) and a host kind (``llvm`` upstream, ``c`` here: host code is C compiled by the
system compiler). :class:`Target` parses and prints TVM's target strings
(``"ext_dev -device=vta -keys=vta,cpu -model=sim_1x16_i8w8a32_15_15_18_17"``) so that
``tvm.target.Target("ext_dev", host=env.target_host)``, ``tvm.target.vta(model=...)`` and
``env.target`` work unchanged.
"""

from __future__ import annotations

import shlex
import threading
from typing import Any, Mapping

__all__ = ["Target", "TargetKind", "vta", "arm_cpu", "create", "KNOWN_KINDS"]

# The stack of targets entered with ``with target:`` (innermost last), per thread.
_scope = threading.local()

#: Target kinds this namespace understands: the accelerator and the host compilers.
KNOWN_KINDS = ("ext_dev", "llvm", "c")

# Device codes of TVM's DLDeviceType for each kind (ext_dev = 12, hosts = cpu = 1).
_DEVICE_TYPE = {"ext_dev": 12, "llvm": 1, "c": 1}


class TargetKind:
    """The kind of a target (its first word): ``ext_dev``, ``llvm`` or ``c``.

    Attributes
    ----------
    name : str
    device_type : int
        The DLPack device type code of the kind (12 for ``ext_dev``, 1 for host kinds).
    """

    def __init__(self, name: str):
        self.name = name
        self.device_type = _DEVICE_TYPE[name]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"TargetKind({self.name!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TargetKind):
            return other.name == self.name
        return isinstance(other, str) and other == self.name

    def __hash__(self) -> int:
        return hash(self.name)


def _parse(text: str) -> tuple[str, dict[str, str]]:
    """Split ``"kind -key=value -flag ..."`` into the kind and its options.

    Raises
    ------
    ValueError
        If the string is empty, the kind is unknown or an option does not start with ``-``.
    """
    words = shlex.split(text)
    if not words:
        raise ValueError(f"empty target string {text!r}; accepted kinds: {', '.join(KNOWN_KINDS)}")
    kind, opts = words[0], {}
    if kind not in KNOWN_KINDS:
        raise ValueError(
            f"target kind {kind!r} (in {text!r}) is not supported; accepted kinds: {', '.join(KNOWN_KINDS)}"
        )
    for word in words[1:]:
        if not word.startswith("-") or word == "-":
            raise ValueError(f"target option {word!r} in {text!r} must look like -key=value or -flag")
        key, sep, value = word.lstrip("-").partition("=")
        opts[key] = value if sep else "true"
    return kind, opts


class Target:
    """A compilation target: a kind, its options and, for the accelerator, a host target.

    Parameters
    ----------
    target : str, Target or mapping
        A target string (``"ext_dev"``, ``"llvm -mtriple=..."``, ``"c"``), another Target
        (copied), or a mapping with ``kind`` and option keys.
    host : str or Target, optional
        The host target of an ``ext_dev`` target (``env.target_host``).

    Attributes
    ----------
    kind : TargetKind
    host : Target or None
    attrs : dict of str to str
        The ``-key=value`` options.
    keys : tuple of str
    model : str

    Raises
    ------
    ValueError
        If the kind is not one of ``ext_dev``, ``llvm``, ``c`` or an option is malformed.
    TypeError
        If ``target`` or ``host`` has another type.

    Examples
    --------
    >>> t = Target("ext_dev", host="c")
    >>> str(t.kind), str(t.host)
    ('ext_dev', 'c')
    >>> with t:
    ...     Target.current() is t
    True
    """

    def __init__(self, target: "str | Target | Mapping[str, Any]", host: "str | Target | None" = None):
        if isinstance(target, Target):
            kind, opts = target.kind.name, dict(target.attrs)
            host = host if host is not None else target.host
        elif isinstance(target, str):
            kind, opts = _parse(target)
        elif isinstance(target, Mapping):
            if "kind" not in target:
                raise ValueError(f"a target mapping needs a 'kind' key, got {dict(target)!r}")
            kind, opts = _parse(str(target["kind"]))
            host = host if host is not None else target.get("host")
            opts.update({str(k): str(v) for k, v in target.items() if k not in ("kind", "host")})
        else:
            raise TypeError(f"a target is a str, a Target or a mapping, got {type(target).__name__}: {target!r}")
        self.kind = TargetKind(kind)
        self.attrs: dict[str, str] = opts
        if host is None or isinstance(host, Target):
            self.host = host
        elif isinstance(host, (str, Mapping)):
            self.host = Target(host)
        else:
            raise TypeError(f"a target host is a str or a Target, got {type(host).__name__}: {host!r}")

    @property
    def keys(self) -> tuple[str, ...]:
        """The ``-keys`` option as a tuple (empty if absent)."""
        raw = self.attrs.get("keys", "")
        return tuple(k for k in raw.split(",") if k)

    @property
    def model(self) -> str:
        """The ``-model`` option (``"unknown"`` if absent, as upstream)."""
        return self.attrs.get("model", "unknown")

    @property
    def device_name(self) -> str:
        """The ``-device`` option (empty if absent)."""
        return self.attrs.get("device", "")

    @property
    def device_type(self) -> int:
        """The DLPack device type the kind's code runs on (12 for ``ext_dev``)."""
        return self.kind.device_type

    def __str__(self) -> str:
        parts = [self.kind.name]
        for key, value in self.attrs.items():
            parts.append(f"-{key}" if value == "true" else f"-{key}={value}")
        return " ".join(parts)

    def __repr__(self) -> str:
        host = f", host={str(self.host)!r}" if self.host is not None else ""
        return f"Target({str(self)!r}{host})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = Target(other)
            except (ValueError, TypeError):
                return False
        if not isinstance(other, Target):
            return NotImplemented
        return str(self) == str(other) and str(self.host) == str(other.host)

    def __hash__(self) -> int:
        return hash((str(self), str(self.host)))

    # ------------------------------------------------------------------ scope
    def __enter__(self) -> "Target":
        """Make this target the current one (:meth:`current`) until the ``with`` block ends."""
        stack = getattr(_scope, "stack", None)
        if stack is None:
            stack = _scope.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        stack = getattr(_scope, "stack", None)
        if not stack or stack[-1] is not self:
            raise RuntimeError(f"target scopes exited out of order: {self!r} is not the innermost target")
        stack.pop()

    @staticmethod
    def current(allow_none: bool = True) -> "Target | None":
        """The target of the innermost ``with target:`` block of this thread.

        Parameters
        ----------
        allow_none : bool
            Return None outside any block (the default); with False, raise instead.

        Raises
        ------
        ValueError
            If no target is current and ``allow_none`` is False.
        """
        stack = getattr(_scope, "stack", None)
        if stack:
            return stack[-1]
        if not allow_none:
            raise ValueError("no target is current: enter one with `with tvm.target.Target(...):`")
        return None

    def with_host(self, host: "str | Target") -> "Target":
        """A copy of this target with ``host`` as its host target.

        Raises
        ------
        ValueError, TypeError
            If ``host`` is not a valid target.
        """
        return Target(self, host=Target(host))


def vta(model: str = "unknown", options: list[str] | None = None) -> Target:
    """The VTA accelerator target ``ext_dev -device=vta -keys=vta,cpu -model=<model>``.

    Parameters
    ----------
    model : str
        The hardware model name (``env.MODEL``, e.g. ``"sim_1x16_i8w8a32_15_15_18_17"``).
    options : list of str, optional
        Extra ``-key=value`` options appended to the string.

    Raises
    ------
    ValueError
        If ``model`` contains white space or an option is malformed.
    """
    return _with_model("ext_dev -device=vta -keys=vta,cpu", "a VTA", model, options)


def arm_cpu(model: str = "unknown", options: list[str] | None = None) -> Target:
    """The host CPU target of a VTA board, ``llvm -keys=arm_cpu,cpu -device=arm_cpu -model=<model>``
    (upstream ``tvm.target.arm_cpu``; ``env.target_vta_cpu``).

    Code built for it runs on the host through the C code generator (see
    :func:`vta.build.build_host`); the model only names the board.

    Parameters
    ----------
    model : str
        The board or simulator name (``env.TARGET``: ``"sim"``, ``"tsim"``, ``"pynq"`` ...).
    options : list of str, optional
        Extra ``-key=value`` options appended to the string.

    Raises
    ------
    ValueError
        If ``model`` contains white space or an option is malformed.
    """
    return _with_model("llvm -keys=arm_cpu,cpu -device=arm_cpu", "a CPU", model, options)


def _with_model(base: str, what: str, model: str, options: list[str] | None) -> Target:
    """``Target("<base> -model=<model> <options>")``; ``what`` names the model in the error."""
    if not isinstance(model, str) or not model or any(c.isspace() for c in model):
        raise ValueError(f"{what} model name is a non-empty word without spaces, got {model!r}")
    text = f"{base} -model={model}"
    if options:
        text += " " + " ".join(options)
    return Target(text)


def create(target: "str | Target") -> Target:
    """``tvm.target.create`` (deprecated upstream): the same as ``Target(target)``.

    Raises
    ------
    ValueError, TypeError
        As :class:`Target`.
    """
    return Target(target)


def _target_kind(target: Any) -> str:
    """The kind name of ``target`` (a Target, a string, or None meaning ``ext_dev``).

    Raises
    ------
    ValueError, TypeError
        If ``target`` is not a valid target.
    """
    if target is None:
        return "ext_dev"
    return Target(target).kind.name if not isinstance(target, Target) else target.kind.name

