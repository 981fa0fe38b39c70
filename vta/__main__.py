"""The ``python -m vta`` command line: run int8 ONNX models, run and disassemble program packs, run the demo.

Commands::

    python -m vta run [MODEL.onnx|digits] [--input x.npy] [--target sim|tsim|model] [--config FILE] [--batch N]
    python -m vta run PACK [--seed N] [--trace] [--json] [--target sim|tsim]
    python -m vta disasm PACK
    python -m vta demo [--config PATH] [--seed N] [--save-pack DIR] [--json] [--target sim|tsim]
    python -m vta profile PACK|MODEL.onnx --out DIR [--target tsim|model|sim] [--window N] [--no-plots]

    python -m vta regress [--config FILE ...] [--baseline PATH] [--update-baseline] [--programs N] [--junit FILE]
    python -m vta sweep SPEC [--out DIR] [--scheduler ADDRESS] [--workers N] [--confirm-tsim]
    python -m vta area [--config FILE ...] [--hw DIR] [--json]

Exit status: 0 when every checked region matches, 1 when a check fails, 2 on any error (bad
arguments, a malformed pack, a simulation error), reported as one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence, TextIO

from . import isa
from .dram import DRAM
from .env import PAGE_BYTES, Environment, load_config
from .errors import VTAError
from .pack import Pack

__all__ = ["main", "make_device", "execute"]

#: Targets the command line can execute.
SUPPORTED_TARGETS = ("sim", "tsim")


def make_device(env: Environment, dram: DRAM, seed: int | None = None, trace: bool = False,
                target: str | None = None):
    """Create the device for ``target`` (default ``env.TARGET``) attached to ``dram``.

    ``sim`` is the functional simulator (``seed`` and ``trace`` apply to it); ``tsim`` is the
    Verilated RTL, built on first use and cached.

    Raises
    ------
    VTAError
        If the target is not one this command can run, or ``seed``/``trace`` are given for tsim.
    BuildError, ModuleLoadError
        If the tsim library cannot be built or loaded.
    """
    target = target or env.TARGET
    if target == "sim":
        from .sim.fsim import FunctionalSimulator

        return FunctionalSimulator(env, dram, seed=seed, trace=trace)
    if target == "tsim":
        if seed is not None or trace:
            raise VTAError("--seed and --trace apply to the sim target (fsim) only")
        from .sim.tsim import TSim

        return TSim(env, dram)
    raise VTAError(f"target {target!r} cannot be run here (accepted: {', '.join(SUPPORTED_TARGETS)})")


def execute(pack: Pack, seed: int | None = None, trace: bool = False,
            target: str | None = None) -> tuple[dict, dict, list]:
    """Install ``pack`` in a fresh arena, run it on ``target`` (default: its TARGET) and check it.

    Returns
    -------
    (dict, dict, list)
        Mismatch counts per checked region, the device statistics, and the executed
        instructions as ``(index, stage, text)`` when ``trace`` is set (else empty).

    Raises
    ------
    VTAError
        If the pack cannot be installed or the device reports an error.
    """
    capacity = max(max(r.end for r in pack.regions), 2 * PAGE_BYTES)  # regions end by 4 GiB
    with DRAM(capacity) as dram:
        pack.install(dram)
        device = make_device(pack.env, dram, seed=seed, trace=trace, target=target)
        try:
            device.clear_stats()
            stats = pack.run(device)
            mismatches = pack.check(dram)
            executed = list(getattr(device, "trace", None) or []) if trace else []
        finally:
            device.close()
    return mismatches, stats, executed


def _report(pack: Pack, result: tuple[dict, dict, list], as_json: bool, out: TextIO, title: str,
            target: str) -> int:
    mismatches, stats, executed = result
    ok = all(v == 0 for v in mismatches.values())
    if as_json:
        regions = {}
        for name, bad in mismatches.items():
            size = int(pack.expected[name].size)
            regions[name] = {"pass": bad == 0, "mismatches": bad, "elements": size}
        doc = {"name": title, "target": target, "pass": ok, "regions": regions, "stats": stats}
        if executed:
            doc["trace"] = [{"index": int(i), "stage": str(st), "text": str(t)} for i, st, t in executed]
        json.dump(doc, out, indent=2, default=str)
        out.write("\n")
        return 0 if ok else 1
    out.write(f"{title}: {pack.insn_count} instructions on {target} ({pack.env.BITSTREAM})\n")
    if executed:
        out.write("trace (instructions in execution order):\n")
        for i, stage, text in executed:
            out.write(f"  [{i}] {stage}: {text}\n")
    if not mismatches:
        out.write("  (the pack has no expected outputs to check)\n")
    for name, bad in mismatches.items():
        size = int(pack.expected[name].size)
        verdict = "PASS" if bad == 0 else "FAIL"
        out.write(f"  {verdict} {name}: {bad} of {size} elements differ\n")
    out.write("statistics:\n")
    for key, value in stats.items():
        text = json.dumps(value, default=str) if isinstance(value, (dict, list)) else value
        out.write(f"  {key}: {text}\n")
    out.write(("PASS" if ok else "FAIL") + "\n")
    return 0 if ok else 1


def _is_model(arg: Path | None) -> bool:
    return arg is None or str(arg) == "digits" or arg.suffix.lower() == ".onnx"


def _cmd_run_model(args, out: TextIO) -> int:
    """``run MODEL.onnx`` / ``run`` / ``run digits``: an int8 ONNX model on a simulator."""
    import numpy as np

    from .models import runner

    if args.seed is not None or args.trace or args.json:
        raise VTAError("--seed, --trace and --json apply to program packs, not to models")
    if args.batch is not None and args.batch < 1:
        raise VTAError(f"--batch must be positive, got {args.batch!r}")
    env = Environment({**load_config(args.config), **({"TARGET": args.target} if args.target else {})})
    if args.pack is None or str(args.pack) == "digits":
        if args.input is not None:
            raise VTAError("--input applies to a model file; the digits model runs on its own test images")
        res = runner.run_digits(env, out, batch=args.batch or 1, limit=args.limit)
        built = res["built"]
        out.write(f"digits (bundled int8 CNN, scikit-learn 8x8 digits) on {env.TARGET} ({env.BITSTREAM}), "
                  f"batch {args.batch or 1}\n")
        out.write(runner.format_layers(built) + "\n")
        ort = res["onnxruntime_int8_accuracy"]
        out.write(f"built in {res['build_s']:.2f} s; {res['images']} test images in {res['run_s']:.2f} s "
                  f"({res['images_per_s']:.1f} images/s)\n")
        out.write(f"top-1 accuracy: {res['accuracy']:.4f} ({res['images']} images; onnxruntime int8: "
                  f"{'n/a' if ort is None else f'{ort:.4f}'})\n")
        built.close()
        return 0
    sys.stderr.write(f"importing and building {args.pack} for {env.TARGET} ...\n")
    built = runner.build(args.pack, env, batch=args.batch)
    try:
        if args.input is not None:
            x = np.load(args.input)
            if args.batch is None and x.shape != built.input_shape and x.shape == built.input_shape[1:]:
                x = x[None]
        else:
            rng = np.random.default_rng(0)
            x = rng.standard_normal(built.input_shape).astype(np.float32) if built.input_dtype.startswith("float") \
                else rng.integers(0, 100, built.input_shape).astype(built.input_dtype)
            out.write(f"(no --input: a random {built.input_dtype} input of shape {built.input_shape}, seed 0)\n")
        sys.stderr.write(f"built in {built.build_s:.2f} s; running on {env.TARGET} ...\n")
        try:
            outputs = runner.run(built, x)
        except ValueError as exc:
            raise VTAError(str(exc)) from exc
        out.write(f"{args.pack} on {env.TARGET} ({env.BITSTREAM}); built in {built.build_s:.2f} s\n")
        for i, y in enumerate(outputs):
            out.write(f"output {i}: {y.dtype}{list(y.shape)}\n")
            if y.ndim == 2 and y.shape[1] >= 2:
                out.write(runner.format_top5(y) + "\n")
            else:
                out.write(np.array2string(y.reshape(-1)[:16], precision=4) + (" ...\n" if y.size > 16 else "\n"))
        out.write(runner.format_layers(built) + "\n")
    finally:
        built.close()
    return 0


def _cmd_run(args, out: TextIO) -> int:
    if _is_model(args.pack):
        return _cmd_run_model(args, out)
    for flag in ("input", "config", "batch"):
        if getattr(args, flag) is not None:
            raise VTAError(f"--{flag} applies to ONNX models (MODEL.onnx), not to program packs")
    if args.target == "model":
        raise VTAError("program packs run on sim or tsim, not on the cycle model target")
    pack = Pack.load(args.pack)
    result = execute(pack, seed=args.seed, trace=args.trace, target=args.target)
    return _report(pack, result, args.json, out, str(args.pack), args.target or pack.env.TARGET)


def _cmd_disasm(args, out: TextIO) -> int:
    pack = Pack.load(args.pack)
    out.write(isa.disassemble(pack.instructions(), pack.env))
    return 0


def _cmd_demo(args, out: TextIO) -> int:
    from .demo import build_demo_pack

    env = Environment(load_config(args.config))
    pack = build_demo_pack(env, seed=args.data_seed)
    if args.save_pack:
        pack.save(args.save_pack)
        if not args.json:
            out.write(f"wrote the demo pack to {args.save_pack}\n")
    result = execute(pack, seed=args.seed, trace=args.trace, target=args.target)
    return _report(pack, result, args.json, out, "demo (GEMM + SHR + clip, checked against NumPy)",
                   args.target or env.TARGET)


def _cmd_profile(args, out: TextIO) -> int:
    from . import models  # noqa: F401  (registers the whole-model profiler)
    from .profile.session import run_profile

    return run_profile(args.source, args.target, args.out, window=args.window, plots=not args.no_plots, out=out)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m vta", description="Run VTA program packs and the demo on a simulator.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run an int8 ONNX model (default: the bundled digits model) or a program pack")
    run.add_argument("pack", type=Path, nargs="?", default=None, metavar="MODEL.onnx|digits|PACK",
                     help="an int8 ONNX model, 'digits' (the default: the bundled digits classifier on its "
                          "test images), or a program pack directory")
    run.add_argument("--input", type=Path, default=None, help="model input as a .npy file (default: random)")
    run.add_argument("--config", type=Path, default=None,
                     help="configuration file for a model (default: $VTA_CONFIG, else the shipped default)")
    run.add_argument("--batch", type=int, default=None, help="run a model with this batch size")
    run.add_argument("--limit", type=int, default=None, help=argparse.SUPPRESS)
    run.add_argument("--seed", type=int, default=None, help="run a seeded random interleaving allowed by the tokens")
    run.add_argument("--trace", action="store_true", help="ask the simulator for a trace of the run")
    run.add_argument("--json", action="store_true", help="print the result as one JSON object")
    run.add_argument("--target", choices=SUPPORTED_TARGETS + ("model",), default=None,
                     help="run on this target instead of the configuration's TARGET (model: the cycle "
                          "model, for ONNX models)")
    run.set_defaults(func=_cmd_run)

    dis = sub.add_parser("disasm", help="print a pack's instruction stream in the upstream dump format")
    dis.add_argument("pack", type=Path, metavar="PACK", help="pack directory")
    dis.set_defaults(func=_cmd_disasm)

    demo = sub.add_parser("demo", help="build, run and check a small GEMM + ALU program")
    demo.add_argument("--config", type=Path, default=None,
                      help="configuration file (default: $VTA_CONFIG, else the shipped default)")
    demo.add_argument("--save-pack", type=Path, default=None, metavar="DIR", help="also write the demo as a pack")
    demo.add_argument("--seed", type=int, default=None, help="run a seeded random interleaving allowed by the tokens")
    demo.add_argument("--data-seed", type=int, default=0, help="seed of the random input data (default 0)")
    demo.add_argument("--trace", action="store_true", help="ask the simulator for a trace of the run")
    demo.add_argument("--json", action="store_true", help="print the result as one JSON object")
    demo.add_argument("--target", choices=SUPPORTED_TARGETS, default=None,
                      help="run on this target instead of the configuration's TARGET")
    demo.set_defaults(func=_cmd_demo)

    prof = sub.add_parser("profile", help="trace a pack or model: Perfetto trace, per-layer reports, plots")
    prof.add_argument("source", type=Path, metavar="PACK|MODEL.onnx", help="pack directory or model file")
    prof.add_argument("--out", type=Path, required=True, metavar="DIR", help="directory for the outputs")
    prof.add_argument("--target", choices=("tsim", "model", "sim"), default="model",
                      help="tsim (RTL), model (cycle model, default) or sim (fsim: program order, no time)")
    prof.add_argument("--window", type=int, default=256, help="cycles per memory-traffic sample (default 256)")
    prof.add_argument("--no-plots", action="store_true", help="skip the matplotlib plots")
    prof.set_defaults(func=_cmd_profile)

    from .dse import cli as dse_cli  # regress and sweep: the hardware designer's tools

    dse_cli.add_commands(sub)
    from .hw import cli as hw_cli  # area from synthesis

    hw_cli.add_commands(sub)
    return p


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command line.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``).
    out : text stream, optional
        Where results go (default: ``sys.stdout``). Errors always go to ``sys.stderr``.

    Returns
    -------
    int
        0 on success, 1 when a check fails, 2 on an error.
    """
    out = out or sys.stdout
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse has printed its usage message
        return 0 if exc.code in (0, None) else 2
    try:
        return args.func(args, out)
    except (VTAError, OSError, ValueError) as exc:
        lines = str(exc).splitlines() or [repr(exc)]
        sys.stderr.write(f"vta: error: {type(exc).__name__}: {lines[0]}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
