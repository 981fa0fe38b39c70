"""Results of the regression: checks, the one table a designer reads, and JUnit XML for CI.

Every stage produces :class:`Check` records (``pass``, ``fail``, ``skip`` or ``error``); the
workload stage also produces :class:`WorkloadRow` records (cycles against the baseline and the
model's error). :func:`format_table` prints both; :func:`write_junit` writes one ``testsuite``
per stage with one ``testcase`` per check.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["STATUSES", "Check", "WorkloadRow", "format_table", "write_junit"]

STATUSES = ("pass", "fail", "skip", "error")


@dataclass
class Check:
    """One verdict: a stage, what was checked, the status and why."""

    stage: str
    name: str
    status: str
    message: str = ""
    seconds: float = 0.0

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"check status {self.status!r} is not one of {STATUSES!r}")


@dataclass
class WorkloadRow:
    """Cycles of one workload on one configuration."""

    config: str
    workload: str
    tsim_cycles: int | None = None
    baseline: int | None = None
    change: str = ""
    model_cycles: int | None = None
    model_error: float | None = None
    verdict: str = ""
    notes: list = field(default_factory=list)


def _fmt(value) -> str:
    return "-" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


def format_table(checks: list[Check], rows: list[WorkloadRow]) -> str:
    """The regression table: correctness per stage, then cycles per workload, then the verdict."""
    lines = []
    head = ("stage", "checked", "result", "detail")
    body = [(c.stage, c.name, c.status.upper(), c.message.splitlines()[0] if c.message else "") for c in checks]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(3)]
    lines.append("  ".join(h.ljust(w) for h, w in zip(head[:3], widths, strict=True)) + "  " + head[3])
    for r in body:
        lines.append("  ".join(v.ljust(w) for v, w in zip(r[:3], widths, strict=True)) + "  " + r[3][:110])
    if rows:
        lines.append("")
        head2 = ("config", "workload", "baseline", "tsim", "change", "model", "model err", "verdict")
        body2 = [(r.config, r.workload, _fmt(r.baseline), _fmt(r.tsim_cycles), r.change or "-", _fmt(r.model_cycles),
                  ("-" if r.model_error is None else f"{100 * r.model_error:+.2f}%") + (" (waived)" if "waived" in r.notes
                                                                                       else ""),
                  r.verdict) for r in rows]
        w2 = [max(len(r[i]) for r in [head2, *body2]) for i in range(len(head2))]
        right = {2, 3, 4, 5, 6}
        for r in [head2, *body2]:
            lines.append("  ".join(v.rjust(w) if i in right else v.ljust(w) for i, (v, w) in enumerate(zip(r, w2, strict=True))))
    bad = [c for c in checks if c.status in ("fail", "error")]
    lines.append("")
    lines.append(f"{'FAIL' if bad else 'PASS'}: {len(checks)} checks, {sum(c.status == 'pass' for c in checks)} passed, "
                 f"{sum(c.status == 'fail' for c in checks)} failed, {sum(c.status == 'error' for c in checks)} errors, "
                 f"{sum(c.status == 'skip' for c in checks)} skipped")
    for c in bad:
        lines.append(f"  {c.status.upper()} {c.stage} {c.name}: {c.message.splitlines()[0] if c.message else ''}")
    return "\n".join(lines) + "\n"


def write_junit(checks: list[Check], path: str | Path, name: str = "vta-regress") -> Path:
    """Write the checks as JUnit XML (one testsuite per stage); return the path.

    Raises
    ------
    OSError
        If the file cannot be written.
    """
    root = ET.Element("testsuites", name=name)
    stages: dict[str, list[Check]] = {}
    for c in checks:
        stages.setdefault(c.stage, []).append(c)
    for stage, members in stages.items():
        suite = ET.SubElement(root, "testsuite", name=stage, tests=str(len(members)),
                              failures=str(sum(c.status == "fail" for c in members)),
                              errors=str(sum(c.status == "error" for c in members)),
                              skipped=str(sum(c.status == "skip" for c in members)),
                              time=f"{sum(c.seconds for c in members):.3f}")
        for c in members:
            case = ET.SubElement(suite, "testcase", classname=f"{name}.{stage}", name=c.name, time=f"{c.seconds:.3f}")
            first = c.message.splitlines()[0] if c.message else ""
            if c.status in ("fail", "error"):
                tag = "failure" if c.status == "fail" else "error"
                ET.SubElement(case, tag, message=first[:500]).text = c.message
            elif c.status == "skip":
                ET.SubElement(case, "skipped", message=first[:500])
    path = Path(path)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
    return path
