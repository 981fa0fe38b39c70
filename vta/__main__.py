"""The ``python -m vta`` command line: run int8 ONNX models, run and disassemble program packs, run the demo.

Commands::

    python -m vta run [MODEL.onnx|digits|zoo:NAME] [--input x.npy] [--target sim|tsim|model] [--config FILE]
                      [--batch N] [--shape NAME=1,3,224,224] [--compare]
    python -m vta quantize MODEL.onnx --out q.onnx [--calibration DIR|--random N] [--shape NAME=1,3,224,224]
    python -m vta run PACK [--seed N] [--trace] [--json] [--target sim|tsim]
    python -m vta disasm PACK
    python -m vta demo [--config PATH] [--seed N] [--save-pack DIR] [--json] [--target sim|tsim]
    python -m vta profile PACK|MODEL.onnx|digits|zoo:NAME --out DIR [--target tsim|model|sim] [--window N] [--no-plots]

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
    return arg is None or str(arg) == "digits" or str(arg).startswith("zoo:") or arg.suffix.lower() == ".onnx"


def model_path(arg: Path | str) -> Path:
    """A model argument as a file: ``digits`` (the bundled model), ``zoo:NAME`` (a zoo model,
    fetched and quantized once, :mod:`vta.models.zoo`) or a ``.onnx`` path.

    Raises
    ------
    ModelFetchError
        If a zoo model cannot be fetched.
    """
    text = str(arg)
    if text == "digits":
        from .models import digits_model_path

        return Path(digits_model_path())
    if text.startswith("zoo:"):
        from .models import zoo

        return zoo.resolve(text)
    return Path(arg)


def parse_shapes(items: Sequence[str] | None) -> dict[str, tuple[int, ...]]:
    """``--shape name=1,3,224,224`` options as ``{name: shape}``.

    Raises
    ------
    VTAError
        If an option is not ``NAME=D1,D2,...`` with positive integer dimensions.
    """
    shapes: dict[str, tuple[int, ...]] = {}
    for item in items or ():
        name, sep, dims = item.partition("=")
        try:
            shape = tuple(int(d) for d in dims.split(","))
        except ValueError:
            shape = ()
        if not sep or not name or not shape or any(d <= 0 for d in shape):
            raise VTAError(f"--shape {item!r}: expected NAME=D1,D2,... with positive integers, "
                           f"e.g. --shape x=1,3,224,224")
        shapes[name] = shape
    return shapes


def _cmd_run_model(args, out: TextIO) -> int:
    """``run MODEL.onnx`` / ``run`` / ``run digits``: an int8 ONNX model on a simulator."""
    import numpy as np

    from .models import runner

    if args.seed is not None or args.trace or args.json:
        raise VTAError("--seed, --trace and --json apply to program packs, not to models")
    if args.batch is not None and args.batch < 1:
        raise VTAError(f"--batch must be positive, got {args.batch!r}")
    env = Environment({**load_config(args.config), **({"TARGET": args.target} if args.target else {})})
    if args.pack is None or (str(args.pack) == "digits" and not args.compare):
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
    path = model_path(args.pack)
    sys.stderr.write(f"importing and building {args.pack} for {env.TARGET} ...\n")
    built = runner.build(path, env, batch=args.batch, shape=parse_shapes(args.shape))
    try:
        if args.input is not None:
            x = np.load(args.input)
            if args.batch is None and x.shape != built.input_shape and x.shape == built.input_shape[1:]:
                x = x[None]
            if len(built.inputs) > 1:
                raise VTAError(f"--input feeds one input; the model has {len(built.inputs)}")
            x = {built.input_name: x}
        else:
            x = built.random_inputs(0)
            for name, shape, dtype in built.inputs:
                out.write(f"(no --input: a random {dtype} input {name!r} of shape {shape}, seed 0)\n")
        sys.stderr.write(f"built in {built.build_s:.2f} s; running on {env.TARGET} ...\n")
        try:
            outputs = runner.run(built, x)
        except ValueError as exc:
            raise VTAError(str(exc)) from exc
        out.write(f"{args.pack} on {env.TARGET} ({env.BITSTREAM}); built in {built.build_s:.2f} s\n")
        for i, y in enumerate(outputs):
            out.write(f"output {i}: {y.dtype}{list(y.shape)}\n")
            out.write(runner.format_output(y) + "\n")
        out.write(runner.format_layers(built) + "\n")
        if args.compare:
            out.write(runner.format_comparison(outputs, runner.onnxruntime_outputs(path, x)) + "\n")
    finally:
        built.close()
    return 0


def _cmd_run(args, out: TextIO) -> int:
    if _is_model(args.pack):
        return _cmd_run_model(args, out)
    if args.compare or args.shape:
        raise VTAError("--compare and --shape apply to ONNX models, not to program packs")
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
    from .models import profile as model_profile
    from .profile.session import run_profile

    source = model_path(args.source) if _is_model(args.source) else args.source
    code = run_profile(source, args.target, args.out, window=args.window, plots=not args.no_plots, out=out)
    table = model_profile.last_node_table()
    if table and _is_model(args.source):
        out.write("every node, CPU and accelerator side by side (one run):\n" + table + "\n")
    return code


def _cmd_quantize(args, out: TextIO) -> int:
    """``quantize MODEL.onnx --out q.onnx``: onnxruntime's pre-processing and quantize_static."""
    from .models.quantize import quantize_file

    if args.calibration is not None and args.random is not None:
        raise VTAError("give --calibration DIR or --random N, not both")
    if args.random is not None and args.random < 1:
        raise VTAError(f"--random must be a positive count, got {args.random!r}")
    done = quantize_file(model_path(args.model), args.out, calibration_dir=args.calibration,
                         random=args.random if args.random is not None else (None if args.calibration else 8),
                         shapes=parse_shapes(args.shape))
    out.write(f"wrote {args.out}: {done}\n")
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m vta", description="Run VTA program packs and the demo on a simulator.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run an int8 ONNX model (default: the bundled digits model) or a program pack")
    run.add_argument("pack", type=Path, nargs="?", default=None, metavar="MODEL.onnx|digits|zoo:NAME|PACK",
                     help="an ONNX model, 'digits' (the default: the bundled digits classifier on its "
                          "test images), a zoo model (zoo:ch_ppocr_cls, ...), or a program pack directory")
    run.add_argument("--shape", action="append", default=None, metavar="NAME=D1,D2,...",
                     help="static shape of a model input with dynamic dimensions (repeatable)")
    run.add_argument("--compare", action="store_true",
                     help="also run onnxruntime on the same model and inputs and compare every output")
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
    prof.add_argument("source", type=Path, metavar="PACK|MODEL.onnx|digits|zoo:NAME",
                      help="pack directory, model file, 'digits' or a zoo model")
    prof.add_argument("--out", type=Path, required=True, metavar="DIR", help="directory for the outputs")
    prof.add_argument("--target", choices=("tsim", "model", "sim"), default="model",
                      help="tsim (RTL), model (cycle model, default) or sim (fsim: program order, no time)")
    prof.add_argument("--window", type=int, default=256, help="cycles per memory-traffic sample (default 256)")
    prof.add_argument("--no-plots", action="store_true", help="skip the matplotlib plots")
    prof.set_defaults(func=_cmd_profile)

    quant = sub.add_parser("quantize", help="quantize a float ONNX model with onnxruntime (QDQ, uint8 activations, "
                                            "int8 per-channel weights)")
    quant.add_argument("model", type=Path, metavar="MODEL.onnx|zoo:NAME", help="the float model")
    quant.add_argument("--out", type=Path, required=True, metavar="Q.onnx", help="where the quantized model goes")
    quant.add_argument("--calibration", type=Path, default=None, metavar="DIR",
                       help="a directory of .npy calibration inputs (one file per sample; NAME.npy files or "
                            "NAME_*.npy for several inputs)")
    quant.add_argument("--random", type=int, default=None, metavar="N",
                       help="calibrate on N seeded random inputs (default: 8 when no --calibration)")
    quant.add_argument("--shape", action="append", default=None, metavar="NAME=D1,D2,...",
                       help="static shape of a model input with dynamic dimensions (repeatable)")
    quant.set_defaults(func=_cmd_quantize)

    from .dse import cli as dse_cli  # regress and sweep: the hardware designer's tools
    from .models import workloads as _model_workloads  # noqa: F401  (onnx:PATH, zoo:NAME, digits as workloads)

    dse_cli.add_commands(sub)
    from .autotvm import cli as tune_cli  # tune: AutoTVM on the cycle model

    tune_cli.add_command(sub)
    from .dse import area_cli  # area from synthesis

    area_cli.add_commands(sub)
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
    except ModuleNotFoundError as exc:
        extra = _EXTRA_OF.get((exc.name or "").partition(".")[0])
        if extra is None:
            raise  # not an optional package: a bug, keep the traceback
        sys.stderr.write(f"vta: error: this command needs the optional package {exc.name!r}; "
                         f"install it with: pip install 'vta[{extra}]'\n")
        return 2


#: The extra of pyproject.toml that installs each optional package a command may import.
_EXTRA_OF = {"onnx": "onnx", "onnxruntime": "onnx", "sympy": "onnx", "matplotlib": "profile",
             "dask": "dse", "distributed": "dse", "xgboost": "tune"}


if __name__ == "__main__":
    sys.exit(main())
