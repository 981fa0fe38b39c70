/*
 * VTA runtime, part 3: micro-op kernels — recording through the finit closure, the kernel map
 * of each uop handle, residency in the uop SRAM, and the GEMM/ALU instructions that run them
 * (reference tvm-vta-software.md 2.6, 4.1, 4.2, 4.5; vta-isa.md 5.5).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vta_rt_internal.h"

/* ---- recording ----------------------------------------------------------------------------- */

static VTARTKernel* recording(const char* what) {
  VTARTQueue* q = &vta_rt_queue;
  if (q->record == NULL) {
    vta_rt_fail("%s: called outside a kernel recording; it is only valid inside the finit "
                "callback of VTAPushGEMMOp/VTAPushALUOp", what);
  }
  return q->record;
}

void VTAUopLoopBegin(uint32_t extent, uint32_t dst_factor, uint32_t src_factor,
                     uint32_t wgt_factor) {
  VTARTKernel* k = recording("VTAUopLoopBegin");
  if (k == NULL || vta_rt_queue.failed) return;
  if (k->nuops != 0) {
    vta_rt_fail("VTAUopLoopBegin: loops must be declared before the first VTAUopPush of a "
                "kernel (this kernel already has %u uops)", k->nuops);
    return;
  }
  if (k->nloops == 2) {
    vta_rt_fail("VTAUopLoopBegin: a kernel has at most 2 hardware loops; a third loop "
                "(extent %u) was declared", extent);
    return;
  }
  VTARTLoop* loop = &k->loops[k->nloops++];
  loop->extent = extent;
  loop->dst_factor = dst_factor;
  loop->src_factor = src_factor;
  loop->wgt_factor = wgt_factor;
  k->open_loops++;
}

void VTAUopLoopEnd(void) {
  VTARTKernel* k = recording("VTAUopLoopEnd");
  if (k == NULL || vta_rt_queue.failed) return;
  if (k->open_loops == 0) {
    vta_rt_fail("VTAUopLoopEnd: no loop is open (every VTAUopLoopEnd needs a VTAUopLoopBegin)");
    return;
  }
  k->open_loops--;
}

#define CHECK_UOP(name, value, width)                                                          \
  do {                                                                                         \
    if (!vta_rt_fits((uint64_t)(value), (width))) {                                            \
      vta_rt_fail("VTAUopPush: %s = %u does not fit the %u-bit micro-op field (at most %llu)", \
                  (name), (unsigned)(value), (unsigned)(width),                                \
                  (unsigned long long)(((uint64_t)1 << (width)) - 1));                         \
      return;                                                                                  \
    }                                                                                          \
  } while (0)

void VTAUopPush(uint32_t mode, uint32_t reset_out, uint32_t dst_index, uint32_t src_index,
                uint32_t wgt_index, uint32_t opcode, uint32_t use_imm, int32_t imm_val) {
  VTARTKernel* k = recording("VTAUopPush");
  if (k == NULL || vta_rt_queue.failed) return;
  if (mode != (uint32_t)k->is_alu) {
    vta_rt_fail("VTAUopPush: mode %u in a kernel of VTAPush%sOp; accepted: %d (%s)", mode,
                k->is_alu ? "ALU" : "GEMM", k->is_alu, k->is_alu ? "ALU" : "GEMM");
    return;
  }
  if (reset_out > 1 || use_imm > 1) {
    vta_rt_fail("VTAUopPush: reset_out %u and use_imm %u must each be 0 or 1", reset_out, use_imm);
    return;
  }
  if (k->is_alu) {
    /* MIN..MUL always; REQ (5) and MOV (6) only when the configuration's header defines them */
    int known = opcode <= VTA_ALU_OPCODE_MUL;
#ifdef VTA_ALU_OPCODE_REQ
    known = known || opcode == VTA_ALU_OPCODE_REQ;
#else
    if (opcode == 5) {
      vta_rt_fail("VTAUopPush: ALU opcode 5 (REQ) needs the hardware option 'ALU_REQUANT', which "
                  "this configuration lacks; set \"ALU_REQUANT\": true in the configuration file");
      return;
    }
#endif
#ifdef VTA_ALU_OPCODE_MOV
    known = known || opcode == VTA_ALU_OPCODE_MOV;
#else
    if (opcode == 6) {
      vta_rt_fail("VTAUopPush: ALU opcode 6 (MOV) needs the hardware option 'ALU_MOV', which "
                  "this configuration lacks; set \"ALU_MOV\": true in the configuration file");
      return;
    }
#endif
    if (!known) {
      vta_rt_fail("VTAUopPush: ALU opcode %u is not one of %d (MIN), %d (MAX), %d (ADD), "
                  "%d (SHR), %d (MUL)%s%s", opcode, VTA_ALU_OPCODE_MIN, VTA_ALU_OPCODE_MAX,
                  VTA_ALU_OPCODE_ADD, VTA_ALU_OPCODE_SHR, VTA_ALU_OPCODE_MUL,
#ifdef VTA_ALU_OPCODE_REQ
                  ", 5 (REQ)",
#else
                  "",
#endif
#ifdef VTA_ALU_OPCODE_MOV
                  ", 6 (MOV)"
#else
                  ""
#endif
                  );
      return;
    }
    if (use_imm && !vta_rt_fits_signed(imm_val, VTA_ALU_IMM_WIDTH)) {
      vta_rt_fail("VTAUopPush: immediate %d does not fit the %d-bit signed ALU field "
                  "(accepted: %lld..%lld)", imm_val, VTA_ALU_IMM_WIDTH,
                  -(1LL << (VTA_ALU_IMM_WIDTH - 1)), (1LL << (VTA_ALU_IMM_WIDTH - 1)) - 1);
      return;
    }
  }
  CHECK_UOP("dst_index", dst_index, VTA_UOP_DST_IDX_WIDTH);
  CHECK_UOP("src_index", src_index, VTA_UOP_SRC_IDX_WIDTH);
  CHECK_UOP("wgt_index", wgt_index, VTA_UOP_WGT_IDX_WIDTH);
  int32_t imm = use_imm ? imm_val : 0;
  if (!k->has_uop) {
    k->has_uop = 1;
    k->reset = reset_out;
    k->opcode = opcode;
    k->use_imm = use_imm;
    k->imm = imm;
  } else if (k->reset != reset_out ||
             (k->is_alu && (k->opcode != opcode || k->use_imm != use_imm || k->imm != imm))) {
    vta_rt_fail("VTAUopPush: uop %u (reset %u, opcode %u, use_imm %u, imm %d) disagrees with "
                "the first uop of its kernel (reset %u, opcode %u, use_imm %u, imm %d); all uops "
                "of a kernel share these fields", k->nuops, reset_out, opcode, use_imm, imm,
                k->reset, k->opcode, k->use_imm, k->imm);
    return;
  }
  if (k->nuops == k->cap) {
    uint32_t cap = k->cap ? 2 * k->cap : 16;
    VTAUop* grown = (VTAUop*)realloc(k->uops, (size_t)cap * sizeof(VTAUop));
    if (grown == NULL) {
      vta_rt_fail("VTAUopPush: out of host memory for %u uops", cap);
      return;
    }
    k->uops = grown;
    k->cap = cap;
  }
  VTAUop* uop = &k->uops[k->nuops++];
  memset(uop, 0, sizeof(*uop));
  uop->dst_idx = dst_index;
  uop->src_idx = src_index;
  uop->wgt_idx = wgt_index;
}

/* ---- loops → instruction fields ------------------------------------------------------------- */

/* Outer and inner hardware loop of a kernel: for GEMM loop 0 is the outer one; for ALU a single
 * loop becomes the inner one; a missing loop runs once with factors 0. */
static void kernel_loops(const VTARTKernel* k, VTARTLoop* out, VTARTLoop* in) {
  static const VTARTLoop once = {1, 0, 0, 0};
  *out = once;
  *in = once;
  if (k->nloops == 2) {
    *out = k->loops[0];
    *in = k->loops[1];
  } else if (k->nloops == 1) {
    if (k->is_alu) *in = k->loops[0];
    else *out = k->loops[0];
  }
}

#define CHECK_LOOP(what, name, value, width)                                                   \
  do {                                                                                         \
    if (!vta_rt_fits((uint64_t)(value), (width))) {                                            \
      vta_rt_fail("%s: loop %s = %u does not fit the %u-bit instruction field (at most %llu)", \
                  (what), (name), (unsigned)(value), (unsigned)(width),                        \
                  (unsigned long long)(((uint64_t)1 << (width)) - 1));                         \
      return -1;                                                                               \
    }                                                                                          \
  } while (0)

static int validate_kernel(const VTARTKernel* k, const char* what) {
  if (k->open_loops != 0) {
    vta_rt_fail("%s: the kernel left %u loop(s) open; close each VTAUopLoopBegin with "
                "VTAUopLoopEnd", what, k->open_loops);
    return -1;
  }
  if (k->nuops > VTA_UOP_BUFF_DEPTH) {
    vta_rt_fail("%s: the kernel has %u uops, more than the %d entries of the uop SRAM", what,
                k->nuops, VTA_UOP_BUFF_DEPTH);
    return -1;
  }
  VTARTLoop out, in;
  kernel_loops(k, &out, &in);
  if (k->is_alu) {
    CHECK_LOOP(what, "outer extent", out.extent, VTA_ALU_ITER_OUT_WIDTH);
    CHECK_LOOP(what, "inner extent", in.extent, VTA_ALU_ITER_IN_WIDTH);
    CHECK_LOOP(what, "outer dst factor", out.dst_factor, VTA_ALU_DST_FACTOR_OUT_WIDTH);
    CHECK_LOOP(what, "inner dst factor", in.dst_factor, VTA_ALU_DST_FACTOR_IN_WIDTH);
    CHECK_LOOP(what, "outer src factor", out.src_factor, VTA_ALU_SRC_FACTOR_OUT_WIDTH);
    CHECK_LOOP(what, "inner src factor", in.src_factor, VTA_ALU_SRC_FACTOR_IN_WIDTH);
    if (out.wgt_factor != 0 || in.wgt_factor != 0) {
      vta_rt_fail("%s: ALU loops have no weight factor, got %u and %u (accepted: 0)", what,
                  out.wgt_factor, in.wgt_factor);
      return -1;
    }
  } else {
    CHECK_LOOP(what, "outer extent", out.extent, VTA_GEM_ITER_OUT_WIDTH);
    CHECK_LOOP(what, "inner extent", in.extent, VTA_GEM_ITER_IN_WIDTH);
    CHECK_LOOP(what, "outer dst factor", out.dst_factor, VTA_GEM_DST_FACTOR_OUT_WIDTH);
    CHECK_LOOP(what, "inner dst factor", in.dst_factor, VTA_GEM_DST_FACTOR_IN_WIDTH);
    CHECK_LOOP(what, "outer src factor", out.src_factor, VTA_GEM_SRC_FACTOR_OUT_WIDTH);
    CHECK_LOOP(what, "inner src factor", in.src_factor, VTA_GEM_SRC_FACTOR_IN_WIDTH);
    CHECK_LOOP(what, "outer wgt factor", out.wgt_factor, VTA_GEM_WGT_FACTOR_OUT_WIDTH);
    CHECK_LOOP(what, "inner wgt factor", in.wgt_factor, VTA_GEM_WGT_FACTOR_IN_WIDTH);
  }
  return 0;
}

/* ---- kernel maps --------------------------------------------------------------------------- */

static void free_kernel(VTARTKernel* k) {
  if (k != NULL) free(k->uops);
  free(k);
}

static VTARTKernel* map_find(const VTARTKernelMap* map, int64_t key) {
  for (uint32_t i = 0; i < map->n; ++i) {
    if (map->items[i]->key == key) return map->items[i];
  }
  return NULL;
}

static int map_add(VTARTKernelMap* map, VTARTKernel* k) {
  if (map->n == map->cap) {
    uint32_t cap = map->cap ? 2 * map->cap : 4;
    VTARTKernel** grown = (VTARTKernel**)realloc(map->items, (size_t)cap * sizeof(*grown));
    if (grown == NULL) return -1;
    map->items = grown;
    map->cap = cap;
  }
  map->items[map->n++] = k;
  return 0;
}

static void dump_kernel(const VTARTKernel* k) {
  VTARTQueue* q = &vta_rt_queue;
  char line[256];
  snprintf(line, sizeof(line), "UOP KERNEL %s (signature key %lld): %u uops, %u loops, reset %u",
           k->is_alu ? "ALU" : "GEMM", (long long)k->key, k->nuops, k->nloops, k->reset);
  q->print_fn(line);
  if (k->is_alu) {
    snprintf(line, sizeof(line), "\talu opcode %u, use_imm %u, imm %d", k->opcode, k->use_imm,
             k->imm);
    q->print_fn(line);
  }
  for (uint32_t i = 0; i < k->nloops; ++i) {
    snprintf(line, sizeof(line), "\tloop %u: extent %u, dst %u, src %u, wgt %u", i,
             k->loops[i].extent, k->loops[i].dst_factor, k->loops[i].src_factor,
             k->loops[i].wgt_factor);
    q->print_fn(line);
  }
  for (uint32_t i = 0; i < k->nuops; ++i) {
    snprintf(line, sizeof(line), "\tuop %u: dst %u, src %u, wgt %u", i,
             (unsigned)k->uops[i].dst_idx, (unsigned)k->uops[i].src_idx,
             (unsigned)k->uops[i].wgt_idx);
    q->print_fn(line);
  }
}

/* Look the kernel up by signature, recording it on a miss. NULL after failing. */
static VTARTKernel* lookup_or_record(int is_alu, void** uop_handle, int (*finit)(void*),
                                     void* signature, int nbytes, const char* what) {
  VTARTQueue* q = &vta_rt_queue;
  if (uop_handle == NULL) {
    vta_rt_fail("%s: uop_handle is NULL; pass the address of a static void* per kernel site", what);
    return NULL;
  }
  if (nbytes != 0 && nbytes != 4) {
    vta_rt_fail("%s: signature of %d bytes; accepted: 0 bytes or 4 bytes (one int32)", what,
                nbytes);
    return NULL;
  }
  if (nbytes == 4 && signature == NULL) {
    vta_rt_fail("%s: a 4-byte signature needs a non-NULL pointer", what);
    return NULL;
  }
  int64_t key = 0;
  if (nbytes == 4) {
    int32_t value;
    memcpy(&value, signature, sizeof(value));
    key = (int64_t)value + 1;
  }
  VTARTKernelMap* map = (VTARTKernelMap*)*uop_handle;
  if (map == NULL) {
    map = (VTARTKernelMap*)calloc(1, sizeof(*map));
    if (map == NULL) {
      vta_rt_fail("%s: out of host memory", what);
      return NULL;
    }
    *uop_handle = map;
  }
  VTARTKernel* k = map_find(map, key);
  if (k != NULL) {
    if (k->is_alu != is_alu) {
      vta_rt_fail("%s: this uop handle holds a %s kernel for signature key %lld", what,
                  k->is_alu ? "ALU" : "GEMM", (long long)key);
      return NULL;
    }
    return k;
  }
  if (finit == NULL) {
    vta_rt_fail("%s: finit is NULL; the kernel cannot be recorded", what);
    return NULL;
  }
  k = (VTARTKernel*)calloc(1, sizeof(*k));
  if (k == NULL) {
    vta_rt_fail("%s: out of host memory", what);
    return NULL;
  }
  k->key = key;
  k->is_alu = is_alu;
  q->record = k;
  int rc = finit(signature);
  q->record = NULL;
  if (!q->failed && rc != 0) {
    vta_rt_fail("%s: the kernel's finit callback returned %d", what, rc);
  }
  if (q->failed || validate_kernel(k, what) != 0 || map_add(map, k) != 0) {
    if (!q->failed) vta_rt_fail("%s: out of host memory", what);
    free_kernel(k);
    return NULL;
  }
  if (q->debug_flag & VTA_DEBUG_DUMP_UOP) dump_kernel(k);
  return k;
}

/* ---- residency in the uop SRAM ------------------------------------------------------------- */

void vta_rt_uop_reset_residency(void) {
  VTARTQueue* q = &vta_rt_queue;
  for (uint32_t i = 0; i < q->nresident; ++i) q->resident[i]->resident = 0;
  q->nresident = 0;
  q->nstaged = 0;
  q->uop_cursor = 0;
}

/* Give the kernel a range of the uop SRAM (wrapping to 0 and evicting the kernels it overlaps
 * when the buffer is exhausted), stage its uops and emit the LOAD UOP. */
static int make_resident(VTARTKernel* k, const char* what) {
  VTARTQueue* q = &vta_rt_queue;
  uint32_t size = k->nuops;
  if (q->uop_cursor + size > VTA_UOP_BUFF_DEPTH || q->uop_cursor >= VTA_UOP_BUFF_DEPTH) {
    q->uop_cursor = 0;
  }
  uint32_t begin = q->uop_cursor, end = begin + size;
  uint32_t kept = 0;
  for (uint32_t i = 0; i < q->nresident; ++i) {
    VTARTKernel* r = q->resident[i];
    if (size != 0 && r->sram_begin < end && begin < r->sram_end) {
      r->resident = 0;
    } else {
      q->resident[kept++] = r;
    }
  }
  q->nresident = kept;
  if (q->nresident == q->resident_cap) {
    uint32_t cap = q->resident_cap ? 2 * q->resident_cap : 16;
    VTARTKernel** grown = (VTARTKernel**)realloc(q->resident, (size_t)cap * sizeof(*grown));
    if (grown == NULL) {
      vta_rt_fail("%s: out of host memory", what);
      return -1;
    }
    q->resident = grown;
    q->resident_cap = cap;
  }
  if (q->nstaged + size > q->staged_cap) {
    uint32_t cap = q->staged_cap ? q->staged_cap : 256;
    while (cap < q->nstaged + size) cap *= 2;
    VTAUop* grown = (VTAUop*)realloc(q->staged, (size_t)cap * sizeof(VTAUop));
    if (grown == NULL) {
      vta_rt_fail("%s: out of host memory", what);
      return -1;
    }
    q->staged = grown;
    q->staged_cap = cap;
  }
  k->resident = 1;
  k->sram_begin = begin;
  k->sram_end = end;
  q->resident[q->nresident++] = k;
  q->uop_cursor = end;
  if (size == 0) return 0;

  uint64_t dram_base = q->uop_phys / VTA_UOP_ELEM_BYTES + q->nstaged;
  memcpy(&q->staged[q->nstaged], k->uops, (size_t)size * sizeof(VTAUop));
  q->nstaged += size;
  if (!vta_rt_fits(dram_base, VTA_MEM_DRAM_BASE_WIDTH) ||
      !vta_rt_fits(size, VTA_MEM_X_SIZE_WIDTH) || !vta_rt_fits(begin, VTA_MEM_SRAM_BASE_WIDTH)) {
    vta_rt_fail("%s: the LOAD UOP of %u uops at uop SRAM %u from element 0x%llx does not fit "
                "the memory instruction's fields", what, size, begin,
                (unsigned long long)dram_base);
    return -1;
  }
  VTAInsn* insn = vta_rt_insn_create(kStageCompute);
  if (insn == NULL) return -1;
  insn->mem.opcode = VTA_OPCODE_LOAD;
  insn->mem.memory_type = VTA_MEM_ID_UOP;
  insn->mem.sram_base = begin;
  insn->mem.dram_base = dram_base;
  insn->mem.y_size = 1;
  insn->mem.x_size = size;
  insn->mem.x_stride = size;
  return 0;
}

/* ---- VTAPushGEMMOp / VTAPushALUOp ---------------------------------------------------------- */

static int push_op(int is_alu, void** uop_handle, int (*finit)(void*), void* signature,
                   int nbytes) {
  const char* what = is_alu ? "VTAPushALUOp" : "VTAPushGEMMOp";
  VTARTQueue* q = &vta_rt_queue;
  if (q->record != NULL) {
    /* Inside another kernel's finit: fail without resetting, the outer recording reports it. */
    vta_rt_fail("%s: called inside the finit callback of another kernel (nested recording)",
                what);
    return -1;
  }
  /* A -1 from here reports the failure: host code returns at once, so the queue is reset. */
  if (q->failed) return vta_rt_report();
  VTARTKernel* k = lookup_or_record(is_alu, uop_handle, finit, signature, nbytes, what);
  if (k == NULL || vta_rt_ready() != 0) return vta_rt_report();

  /* Room for a LOAD UOP, the instruction and the closing ones; else run what is queued. */
  uint32_t limit = vta_rt_xfer_limit();
  if (((uint64_t)q->ninsns + 8) * sizeof(VTAInsn) > limit ||
      (!k->resident && ((uint64_t)q->nstaged + k->nuops) * sizeof(VTAUop) > limit)) {
    if (vta_rt_synchronize(1u << 31) != 0) return -1;
  }
  if (!k->resident && make_resident(k, what) != 0) return vta_rt_report();
  if (!vta_rt_fits(k->sram_begin, VTA_GEM_UOP_BGN_WIDTH) ||
      !vta_rt_fits(k->sram_end, VTA_GEM_UOP_END_WIDTH)) {
    vta_rt_fail("%s: uop range [%u, %u) does not fit the instruction's uop fields", what,
                k->sram_begin, k->sram_end);
    return vta_rt_report();
  }
  VTARTLoop out, in;
  kernel_loops(k, &out, &in);
  VTAInsn* insn = vta_rt_insn_create(kStageCompute);
  if (insn == NULL) return vta_rt_report();
  if (is_alu) {
    insn->alu.opcode = VTA_OPCODE_ALU;
    insn->alu.reset_reg = k->reset;
    insn->alu.uop_bgn = k->sram_begin;
    insn->alu.uop_end = k->sram_end;
    insn->alu.iter_out = out.extent;
    insn->alu.iter_in = in.extent;
    insn->alu.dst_factor_out = out.dst_factor;
    insn->alu.dst_factor_in = in.dst_factor;
    insn->alu.src_factor_out = out.src_factor;
    insn->alu.src_factor_in = in.src_factor;
    insn->alu.alu_opcode = k->opcode;
    insn->alu.use_imm = k->use_imm;
    insn->alu.imm = k->imm;
  } else {
    insn->gemm.opcode = VTA_OPCODE_GEMM;
    insn->gemm.reset_reg = k->reset;
    insn->gemm.uop_bgn = k->sram_begin;
    insn->gemm.uop_end = k->sram_end;
    insn->gemm.iter_out = out.extent;
    insn->gemm.iter_in = in.extent;
    insn->gemm.dst_factor_out = out.dst_factor;
    insn->gemm.dst_factor_in = in.dst_factor;
    insn->gemm.src_factor_out = out.src_factor;
    insn->gemm.src_factor_in = in.src_factor;
    insn->gemm.wgt_factor_out = out.wgt_factor;
    insn->gemm.wgt_factor_in = in.wgt_factor;
  }
  return 0;
}

int VTAPushGEMMOp(void** uop_handle, int (*finit)(void*), void* signature, int nbytes) {
  return push_op(0, uop_handle, finit, signature, nbytes);
}

int VTAPushALUOp(void** uop_handle, int (*finit)(void*), void* signature, int nbytes) {
  return push_op(1, uop_handle, finit, signature, nbytes);
}
