"""Illegal schedules raise ScheduleError naming the stage and the axis, never a wrong program."""

from __future__ import annotations

import pytest

from vta import te
from vta.errors import ScheduleError
from vta.te.lower import schedule_to_primfunc

from .. import workloads as W


def _mm(env):
    wl = W.matrix_multiply(env)
    s = wl.schedule
    c_buf = s[wl.args[2]].op.input_tensors[0]
    a_buf, b_buf = s[c_buf].op.input_tensors
    return wl, s, a_buf, b_buf, c_buf


def _vadd(env):
    wl = W.vadd(env)
    c = wl.args[2]
    return wl, wl.schedule, c, wl.schedule[c].op.input_tensors[0]


def _lower(wl):
    return schedule_to_primfunc(wl.schedule, wl.args, "f")


def test_reorder_foreign_axis(env):
    wl, s, a_buf, b_buf, c_buf = _mm(env)
    c = wl.args[2]
    with pytest.raises(ScheduleError, match=r"stage 'C_buf'.*reorder.*axis 'i0'.*belongs to stage 'C'"):
        s[c_buf].reorder(s[c].op.axis[0], s[c_buf].op.axis[1])


def test_reorder_repeated_axis(env):
    wl, s, a_buf, b_buf, c_buf = _mm(env)
    co = s[c_buf].op.axis[1]
    with pytest.raises(ScheduleError, match=r"stage 'C_buf'.*repeated"):
        s[c_buf].reorder(co, co)


def test_split_of_split_axis(env):
    wl, s, *_ = _mm(env)
    c = wl.args[2]
    s[c].split(s[c].op.axis[1], factor=4)
    with pytest.raises(ScheduleError, match=r"stage 'C'.*split.*axis 'i1' was already split"):
        s[c].split(s[c].op.axis[1], factor=2)


@pytest.mark.parametrize("kwargs", [{}, {"factor": 2, "nparts": 2}, {"factor": 0}, {"nparts": -1}, {"factor": 1.5}])
def test_split_arguments(env, kwargs):
    wl, s, *_ = _mm(env)
    c = wl.args[2]
    with pytest.raises(ScheduleError, match=r"stage 'C'.*'i1'"):
        s[c].split(s[c].op.axis[1], **kwargs)


def test_compute_at_non_ancestor(env):
    wl, s, a_buf, b_buf, c_buf = _mm(env)
    with pytest.raises(ScheduleError, match=r"stage 'C_buf'.*compute_at onto stage 'A_buf', which does not read"):
        s[c_buf].compute_at(s[a_buf], s[a_buf].op.axis[0])
    with pytest.raises(ScheduleError, match=r"stage 'A_buf'.*compute_at onto stage 'B_buf'"):
        s[a_buf].compute_at(s[b_buf], s[b_buf].op.axis[0])


def test_compute_at_axis_of_another_stage(env):
    wl, s, a_buf, b_buf, c_buf = _mm(env)
    with pytest.raises(ScheduleError, match=r"stage 'A_buf'.*axis 'bo' is not an axis of stage 'C'"):
        s[a_buf].compute_at(s[wl.args[2]], s[c_buf].op.axis[0])


def test_compute_at_axis_split_afterwards(env):
    wl, s, c, c_buf = _vadd(env)
    s[c_buf].compute_at(s[c], s[c].op.axis[1])
    s[c].split(s[c].op.axis[1], 8)
    with pytest.raises(ScheduleError, match=r"stage 'C_buf'.*axis 'i1' of stage 'C' is no longer a loop"):
        _lower(wl)


def test_consumer_outside_attach_scope(env):
    wl, s, c, c_buf = _vadd(env)
    a_buf = s[c_buf].op.input_tensors[0]
    s[a_buf].compute_at(s[c], s[c].op.axis[1])  # but C_buf (computed at the root) reads A_buf
    with pytest.raises(ScheduleError, match=r"stage 'A_buf'.*axis 'i1' of stage 'C'.*consumer 'C_buf' runs outside"):
        _lower(wl)


def test_tensorize_region_does_not_match(env):
    wl, s, a_buf, b_buf, c_buf = _mm(env)
    bo, co, bi, ci = s[c_buf].op.axis
    s[c_buf].iter_var_attrs[bi].tensor_intrin = None
    s[c_buf].tensorize(co, env.gemm)
    with pytest.raises(
        ScheduleError, match=r"stage 'C_buf'.*tensorize at axis 'co'.*\[1, 16, 1, 16\].*\[1, 1, 1, 16\]"
    ):
        _lower(wl)


def test_tensorize_reduction_outside_region(env):
    wl, s, a_buf, b_buf, c_buf = _mm(env)
    bo, co, bi, ci = s[c_buf].op.axis
    ko, ki = s[c_buf].op.reduce_axis
    s[c_buf].reorder(ki, bi, ci)  # ki leaves the tensorized region
    with pytest.raises(ScheduleError, match=r"stage 'C_buf'.*tensorize at axis 'bi'.*reduction extents \[1, 1\]"):
        _lower(wl)


def test_tensorize_wrong_computation(env):
    wl, s, _, c_buf = _vadd(env)
    s[c_buf].tensorize(s[c_buf].op.axis[2], env.gemm)
    with pytest.raises(ScheduleError, match=r"stage 'C_buf'.*tensorize at axis 'i2'.*0 reduction axes"):
        _lower(wl)


def test_tensorize_operand_scope(env):
    wl, s, a_buf, b_buf, c_buf = _mm(env)
    s[a_buf].set_scope("global")
    with pytest.raises(ScheduleError, match=r"stage 'C_buf'.*tensorize at axis 'bi'.*'A_buf' is in scope 'global'"):
        _lower(wl)


def test_tensorize_with_attached_stage_inside(env):
    wl, s, a_buf, b_buf, c_buf = _mm(env)
    bo, co, bi, ci = s[c_buf].op.axis
    s[a_buf].compute_at(s[c_buf], ci)
    with pytest.raises(ScheduleError, match=r"stage 'C_buf'.*'A_buf' is computed at axis 'ci' inside"):
        _lower(wl)


def test_pragma_on_split_axis(env):
    wl, s, c, _ = _vadd(env)
    s[c].split(s[c].op.axis[0], factor=1)
    with pytest.raises(ScheduleError, match=r"stage 'C'.*pragma dma_copy is on axis 'i0', which was split"):
        _lower(wl)


def test_fuse_non_adjacent(env):
    _, s, c, _ = _vadd(env)
    with pytest.raises(ScheduleError, match=r"stage 'C'.*axes 'i0' and 'i2' are not adjacent"):
        s[c].fuse(s[c].op.axis[0], s[c].op.axis[2])


def test_bind_and_inline_errors(env):
    wl, s, a_buf, b_buf, c_buf = _mm(env)
    with pytest.raises(ScheduleError, match=r"stage 'C_buf'.*reduction axis 'ko'"):
        s[c_buf].bind(s[c_buf].op.reduce_axis[0], te.thread_axis("cthread"))
    with pytest.raises(ScheduleError, match=r"stage 'C_buf'.*a reduction cannot be inlined"):
        s[c_buf].compute_inline()
    with pytest.raises(ScheduleError, match=r"stage 'C'.*output stage cannot be inlined"):
        s[wl.args[2]].compute_inline()
    with pytest.raises(ScheduleError, match=r"stage 'A'.*placeholder"):
        s[wl.args[0]].split(wl.args[0].op.axis[0] if wl.args[0].op.axis else None, factor=2)
    with pytest.raises(ValueError, match=r"tag 'blockIdx.x' is not supported"):
        te.thread_axis("blockIdx.x")
    with pytest.raises(ScheduleError, match=r"stage 'C'.*vectorize"):
        s[wl.args[2]].vectorize(s[wl.args[2]].op.axis[3])


def test_missing_argument(env):
    wl = W.vadd(env)
    with pytest.raises(ScheduleError, match=r"input 'B' is used by the schedule but is neither in the argument list"):
        schedule_to_primfunc(wl.schedule, [wl.args[0], wl.args[2]], "f")
