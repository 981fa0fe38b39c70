"""``tvm.target``: TVM's name for :mod:`vta.target` (the target descriptions live below the
environment, which hands out ``env.target``)."""

from ..target import KNOWN_KINDS, Target, TargetKind, arm_cpu, create, vta

__all__ = ["Target", "TargetKind", "vta", "arm_cpu", "create", "KNOWN_KINDS"]
