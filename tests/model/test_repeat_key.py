"""The key of the repeat path and its inlined copy in :meth:`CycleModel.run` stay in step.

A timing-only device repeats its last clean run through the compiled entry alone when the
inputs of :meth:`CycleModel._repeat_key` are those of that run; :meth:`CycleModel.run` compares a
copy of that key written out inline (a method call less per repeat). Two checks:

* the two expressions are the same (their syntax trees, with ``self.tokens`` for the parameter
  ``tokens``);
* on a stream run again after one change, the repeat is taken exactly when the test's own table
  says the key is unchanged, and the counters then equal those of the full model (fsim's
  execution, then the replay; it never repeats) given the same change.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

import numpy as np
import pytest

from vta import isa
from vta.dram import DRAM
from vta.sim.debug import DEBUG_DUMP_INSN
from vta.sim.model import CycleModel, Timing
from vta.sim.model import costs as mc
from vta.sim.model import replay as rp
from vta.testing.programs import ProgramBuilder

pytestmark = pytest.mark.skipif(rp.compiled() is None, reason="numba is not installed")


def _tree(func) -> ast.AST:
    return ast.parse(textwrap.dedent(inspect.getsource(func)))


def _inlined_key() -> ast.Tuple:
    """The tuple ``run`` compares with the key of the repeat (``rep[0] == (...)``)."""
    found = [node.comparators[0] for node in ast.walk(_tree(CycleModel.run))
             if isinstance(node, ast.Compare) and ast.unparse(node.left) == "rep[0]"]
    assert len(found) == 1 and isinstance(found[0], ast.Tuple)
    return found[0]


def _method_key() -> ast.Tuple:
    """The tuple ``_repeat_key`` returns, with ``self.tokens`` for its parameter ``tokens``."""
    returns = [node.value for node in ast.walk(_tree(CycleModel._repeat_key)) if isinstance(node, ast.Return)]
    assert len(returns) == 1 and isinstance(returns[0], ast.Tuple)
    key = returns[0]
    for k, item in enumerate(key.elts):
        if isinstance(item, ast.Name) and item.id == "tokens":
            key.elts[k] = ast.parse("self.tokens", mode="eval").body
    return key


def test_the_inlined_key_is_the_key_of_repeat_key():
    inlined, method = _inlined_key(), _method_key()
    assert [ast.unparse(e) for e in inlined.elts] == [ast.unparse(e) for e in method.elts]
    assert ast.dump(inlined) == ast.dump(method)


# ------------------------------------------------------------------------------------ the behaviour
def _stream(env, dram):
    """A GEMM, then FINISH twice: the first ``count - 1`` instructions are a stream as well."""
    b = ProgramBuilder(env, dram)
    b.uops([(0, 0, 0)], sram_base=0)
    b.append(isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=3, iter_in=5))
    b.finish()
    b.finish()
    addr, count = b.build()
    return b, addr, count


class Case:
    """The devices, the stream and the run to make after a change."""

    def __init__(self, env, dram, fast, full, addr, count):
        self.env, self.dram, self.fast, self.full = env, dram, fast, full
        self.addr, self.count = addr, count

    def both(self, fn) -> None:
        fn(self.fast)
        fn(self.full)


def _nothing(case, monkeypatch):
    pass


def _stats_cleared(case, monkeypatch):
    case.both(lambda dev: dev.clear_stats())


def _equal_tokens(case, monkeypatch):
    case.both(lambda dev: setattr(dev, "tokens", [0, 0, 0, 0]))  # (another list, equal)


def _equal_timing(case, monkeypatch):
    case.both(lambda dev: setattr(dev, "timing", Timing()))  # (another object, equal)


def _tokens_lent(case, monkeypatch):
    case.both(lambda dev: setattr(dev, "tokens", [0, 1, 0, 0]))


def _timing_changed(case, monkeypatch):
    case.both(lambda dev: setattr(dev, "timing", Timing(pipe_fill=9)))


def _allocated(case, monkeypatch):
    case.dram.alloc(4096)


def _debug_dump(case, monkeypatch):
    case.both(lambda dev: dev.set_debug_mode(DEBUG_DUMP_INSN))


def _count_shorter(case, monkeypatch):
    case.count -= 1  # (the stream without its second FINISH)


def _count_type(case, monkeypatch):
    case.count = np.int64(case.count)


def _address(case, monkeypatch):
    case.addr = case.copy  # (the same words at another address, allocated before the runs)


def _cost_rule(case, monkeypatch):
    rule = mc.compute_cycles
    monkeypatch.setattr(mc, "compute_cycles", lambda *a, **k: rule(*a, **k))  # (same figures, another rule)


def _fetch_buffer(case, monkeypatch):
    monkeypatch.setattr(mc, "FETCH_BUFFER_INSNS", 0 if getattr(mc, "FETCH_BUFFER_INSNS", 0) else 16)


def _functional(case, monkeypatch):
    case.fast.functional = True


def _another_dram(case, monkeypatch):
    case.both(lambda dev: setattr(dev, "dram", case.other))


#: Each change made between two runs of the stream, and whether the key of the repeat stays
#: (the test's own account of what a timing-only run depends on besides the words).
CHANGES = {
    "nothing": (_nothing, True),
    "statistics cleared": (_stats_cleared, True),
    "equal tokens (another list)": (_equal_tokens, True),
    "equal timing (another object)": (_equal_timing, True),
    "tokens lent": (_tokens_lent, False),
    "timing": (_timing_changed, False),
    "a new allocation": (_allocated, False),
    "debug dump": (_debug_dump, False),
    "instruction count": (_count_shorter, False),
    "instruction count of another type": (_count_type, False),
    "stream address": (_address, False),
    "cost rule": (_cost_rule, False),
    "fetch buffer": (_fetch_buffer, False),
    "functional": (_functional, False),
    "another DRAM": (_another_dram, False),
}


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_the_repeat_is_taken_exactly_when_the_key_stays(env, name, monkeypatch, capsys):
    change, stays = CHANGES[name]
    with DRAM(1 << 24) as dram, DRAM(1 << 24) as other:
        b, addr, count = _stream(env, dram)
        b2, addr2, count2 = _stream(env, other)  # (the same stream in another arena)
        assert (addr2, count2) == (addr, count)
        copy = dram.alloc(16 * count)
        dram.write(copy, dram.read(addr, 16 * count))
        slow = []
        real = CycleModel._run
        monkeypatch.setattr(CycleModel, "_run", lambda self, *a: slow.append(self) or real(self, *a))
        new = CycleModel._time_new  # (the general path's shortcut: a run it takes is not a repeat either)
        monkeypatch.setattr(CycleModel, "_time_new", lambda self, *a: new(self, *a) and (slow.append(self) or True))
        with b, b2, CycleModel(env, dram, functional=False) as fast, CycleModel(env, dram) as full:
            case = Case(env, dram, fast, full, addr, count)
            case.copy, case.other = copy, other
            for dev in (fast, full):
                dev.run(addr, count)
                dev.run(addr, count)
            assert fast._repeat is not None  # (the second run was clean and left no tokens)
            slow.clear()
            change(case, monkeypatch)
            key = fast._repeat_key(case.addr, case.count, fast.tokens)
            assert (key == fast._repeat[0]) is stays  # _repeat_key agrees with the table
            capsys.readouterr()
            full.run(case.addr, case.count)
            fast.run(case.addr, case.count)
            taken = fast not in slow
            assert taken is stays  # the inlined key agrees with the table
            assert fast.last_run == full.last_run
            assert fast.tokens == full.tokens
            fast.functional = False
            for dev in (fast, full):  # and once more, with the change in place
                dev.run(case.addr, case.count)
            assert fast.last_run == full.last_run
            assert fast.stats() == full.stats()
