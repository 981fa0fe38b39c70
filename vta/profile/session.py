"""Profile program packs or a whole model end to end: run every layer's program on one traced
device, then write the trace, the reports and the plots (``python -m vta profile``).

A model file (``MODEL.onnx``) reaches this module through a hook: the graph layer, above this
package, registers with :func:`register_model_loader` a function that takes the path and
returns the programs with their layer names, as ``(name, Pack)`` pairs. Until one is
registered, :func:`load_model` raises a :class:`~vta.profile.recorder.ProfileError` saying so.

Long runs show a tqdm progress bar (one step per layer; on tsim the cycles of the running layer
are shown every million cycles), quiet when stderr is not a terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ..dram import DRAM
from ..env import PAGE_BYTES
from ..pack import Pack
from .chrome import write_chrome
from .events import Timeline
from .recorder import ProfileError, Recorder

__all__ = ["register_model_loader", "register_model_runner", "load_model", "profile_packs", "write_outputs", "progress_bar",
           "PROFILE_TARGETS"]

#: Levels ``profile`` can run: the cycle model and tsim have time, fsim gives program order.
PROFILE_TARGETS = ("tsim", "model", "sim")

ModelLoader = Callable[[Path], Sequence[tuple[str, Pack]]]
_model_loader: ModelLoader | None = None
#: ``(path, target, window) -> Timeline``: runs a whole model with tracing on (the layers above
#: this package register it; it takes precedence over a model loader).
ModelRunner = Callable[[Path, str, int], Timeline]
_model_runner: ModelRunner | None = None


def register_model_runner(runner: ModelRunner | None) -> None:
    """Install the function that runs a model file traced and returns its timeline.

    Raises
    ------
    TypeError
        If ``runner`` is neither callable nor None.
    """
    global _model_runner
    if runner is not None and not callable(runner):
        raise TypeError(f"a model runner must be callable, got {runner!r}")
    _model_runner = runner


def register_model_loader(loader: ModelLoader | None) -> None:
    """Install the function that turns a model file into ``(layer name, Pack)`` pairs.

    Raises
    ------
    TypeError
        If ``loader`` is neither callable nor None.
    """
    global _model_loader
    if loader is not None and not callable(loader):
        raise TypeError(f"a model loader must be callable, got {loader!r}")
    _model_loader = loader


def load_model(path: str | Path) -> list[tuple[str, Pack]]:
    """The programs of a model file with their layer names, through the registered loader.

    Raises
    ------
    ProfileError
        If no loader is registered, or it returned something else than (name, Pack) pairs.
    """
    if _model_loader is None:
        raise ProfileError(
            f"cannot profile {str(path)!r}: no model importer is wired to the profiler yet "
            "(vta.profile.session.register_model_loader); profile a program pack instead")
    out = list(_model_loader(Path(path)))
    for item in out:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Pack)):
            raise ProfileError(f"the model loader returned {item!r}, not a (layer name, Pack) pair")
    return out


def progress_bar(total: int, desc: str, file=None):
    """A tqdm progress bar on stderr, disabled when stderr is not a terminal."""
    from tqdm import tqdm

    stream = file if file is not None else sys.stderr
    return tqdm(total=total, desc=desc, unit="layer", file=stream,
                disable=not (hasattr(stream, "isatty") and stream.isatty()))


#: Cycles between updates of the progress bar during a tsim run.
TSIM_PROGRESS_CYCLES = 1_000_000


def _device(target: str, env, dram: DRAM, bar=None):
    if target == "tsim":
        from ..sim.tsim import TSim

        def progress(cycles: int, retired: int) -> bool:
            if bar is not None:
                bar.set_postfix_str(f"{cycles / 1e6:.0f} M cycles, {retired} instructions")
            return False

        return TSim(env, dram, progress=progress, progress_interval=TSIM_PROGRESS_CYCLES)
    if target == "model":
        from ..sim.model import CycleModel

        return CycleModel(env, dram)
    if target == "sim":
        from ..sim.fsim import FunctionalSimulator

        return FunctionalSimulator(env, dram)
    raise ProfileError(f"target {target!r} cannot be profiled (accepted: {', '.join(PROFILE_TARGETS)})")


def profile_packs(layers: Sequence[tuple[str, Pack]], target: str, *, window: int = 256,
                  check: bool = True) -> tuple[Timeline, dict]:
    """Run each layer's pack, in order, on one traced device of ``target``.

    Parameters
    ----------
    layers : sequence of (str, Pack)
        The programs with their layer names (one configuration for all).
    target : str
        ``tsim``, ``model`` or ``sim``.
    window : int
        Cycles per memory-traffic window.
    check : bool
        Compare each pack's outputs with its expected arrays.

    Returns
    -------
    (Timeline, dict)
        The timeline and, per layer, the mismatching elements per checked region.

    Raises
    ------
    ProfileError
        For an unknown target, no layers, or packs of different configurations.
    vta.errors.SimulationError
        If a program fails on the device.
    """
    if not layers:
        raise ProfileError("nothing to profile: no programs were given")
    env = layers[0][1].env
    for name, pack in layers:
        if pack.env.cfg_dict != env.cfg_dict:
            raise ProfileError(f"layer {name!r} is for configuration {pack.env.BITSTREAM!r}, the first for "
                               f"{env.BITSTREAM!r}; profile one configuration at a time")
    capacity = max(max(r.end for r in pack.regions) for _, pack in layers)
    capacity = max(capacity, 2 * PAGE_BYTES)
    mismatches = {}
    with DRAM(capacity) as dram, progress_bar(len(layers), f"profile ({target})") as bar:
        device = _device(target, env, dram, bar)
        try:
            with Recorder(device, window=window) as rec:
                for name, pack in layers:
                    pack.install(dram)
                    try:
                        with rec.layer(name):
                            pack.run(device)
                        if check and pack.expected:
                            mismatches[name] = pack.check(dram)
                    finally:
                        pack.uninstall(dram)
                    bar.update(1)
        finally:
            device.close()
    return rec.timeline, mismatches


def write_outputs(tl: Timeline, out_dir: str | Path, plots: bool = True,
                  skipped: dict | None = None) -> dict:
    """Write the trace, the reports and (with time and matplotlib) the plots into ``out_dir``.

    The plots are optional: without matplotlib, or on a timeline without time (fsim), they are
    left out and, when ``skipped`` is given, each one left out is recorded there with the reason.

    Parameters
    ----------
    skipped : dict, optional
        Filled with plot name -> why it was not drawn.

    Returns
    -------
    dict
        name -> path of every file written.

    Raises
    ------
    OSError
        If the directory cannot be created or written.
    """
    from .plots import PLOTS, plots_unavailable
    from .report import write_reports

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {"trace": write_chrome(tl, out_dir / "trace.json")}
    files.update(write_reports(tl, out_dir))
    if plots:
        reason = ("the sim target has no cycle time to plot (use --target tsim or model)" if tl.level == "sim"
                  else plots_unavailable())
        if reason is None:
            from .plots import write_plots

            files.update(write_plots(tl, out_dir))
        elif skipped is not None:
            skipped.update(dict.fromkeys(PLOTS, reason))
    return files


def run_profile(source: str | Path, target: str, out_dir: str | Path, *, window: int = 256,
                plots: bool = True, out=None) -> int:
    """``python -m vta profile``: profile a pack directory or a model file, write every output.

    Parameters
    ----------
    source : str or Path
        A program pack directory, or a model file (``.onnx``) through the registered loader.
    target : str
        ``tsim``, ``model`` or ``sim``.
    out_dir : str or Path
        Where the trace, reports and plots go (created if needed).
    window : int
        Cycles per memory-traffic window.
    plots : bool
        Draw the plots (needs matplotlib; without it they are skipped with a note in the summary).
    out : text stream, optional
        Where the summary goes (default: stdout).

    Returns
    -------
    int
        0, or 1 when an output of a pack differs from its expected array.

    Raises
    ------
    ProfileError
        For a source that is neither a pack nor a model file, or no model loader.
    PackError, vta.errors.SimulationError, OSError
        From loading or running the programs, or writing the files.
    """
    from .report import format_text, layer_rows

    out = out or sys.stdout
    source = Path(source)
    if source.is_dir():
        layers = [(source.resolve().name, Pack.load(source))]
    elif source.suffix.lower() == ".onnx":
        layers = None if _model_runner is not None else load_model(source)
    else:
        raise ProfileError(f"{str(source)!r} is neither a program pack directory nor a .onnx model file")
    if layers is None:
        if target not in PROFILE_TARGETS:
            raise ProfileError(f"unknown target {target!r}; accepted: {', '.join(PROFILE_TARGETS)}")
        tl, mismatches = _model_runner(source, target, window), {}
    else:
        tl, mismatches = profile_packs(layers, target, window=window)
    skipped: dict = {}
    files = write_outputs(tl, out_dir, plots=plots, skipped=skipped)
    out.write(format_text(layer_rows(tl), tl))
    bad = {name: m for name, m in mismatches.items() if any(v for v in m.values())}
    for name, m in bad.items():
        out.write(f"FAIL {name}: mismatching elements per region {m}\n")
    out.write(f"trace:   {files['trace']}  (open it at https://ui.perfetto.dev or in chrome://tracing)\n")
    out.write(f"reports: {files['text']}, {files['csv']}, {files['json']}\n")
    pics = [str(files[k]) for k in ("utilisation", "roofline", "timeline") if k in files]
    if pics:
        out.write(f"plots:   {', '.join(pics)}\n")
    for reason in dict.fromkeys(skipped.values()):
        names = ", ".join(k for k, v in skipped.items() if v == reason)
        out.write(f"plots:   skipped {names}: {reason}\n")
    return 1 if bad else 0
