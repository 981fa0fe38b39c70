/*
 * VTA runtime, part 2: the instruction stream, dependency tokens, 2-D loads and stores, and
 * synchronisation (reference tvm-vta-software.md 4.1, 4.3, 4.4; vta-isa.md 5.5).
 *
 * Every field is written through the bit-field structs of the generated hw_spec.h, and every
 * value is checked against the field width the header declares before it is written.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vta_rt_internal.h"

/* ---- the stream ---------------------------------------------------------------------------- */

int vta_rt_insn_stage(const VTAInsn* insn) {
  switch (insn->generic.opcode) {
    case VTA_OPCODE_GEMM:
    case VTA_OPCODE_ALU:
    case VTA_OPCODE_FINISH:
      return kStageCompute;
    case VTA_OPCODE_STORE:
      return insn->mem.x_size == 0 ? kStageNone : kStageStore;
    case VTA_OPCODE_LOAD:
      if (insn->mem.x_size == 0) return kStageNone;
      if (insn->mem.memory_type == VTA_MEM_ID_INP || insn->mem.memory_type == VTA_MEM_ID_WGT) {
        return kStageLoad;
      }
      return kStageCompute;
    default:
      return kStageNone;
  }
}

/* The stage that executes an instruction, no-ops included (they go by opcode and memory type). */
static int stage_executing(const VTAInsn* insn) {
  if (insn->generic.opcode == VTA_OPCODE_STORE) return kStageStore;
  if (insn->generic.opcode == VTA_OPCODE_LOAD &&
      (insn->mem.memory_type == VTA_MEM_ID_INP || insn->mem.memory_type == VTA_MEM_ID_WGT)) {
    return kStageLoad;
  }
  return kStageCompute;
}

static VTAInsn* append_raw(void) {
  VTARTQueue* q = &vta_rt_queue;
  if (q->ninsns == q->insn_cap) {
    uint32_t cap = q->insn_cap ? 2 * q->insn_cap : 256;
    VTAInsn* grown = (VTAInsn*)realloc(q->insns, (size_t)cap * sizeof(VTAInsn));
    if (grown == NULL) {
      vta_rt_fail("VTA runtime: out of host memory for %u instructions", cap);
      return NULL;
    }
    q->insns = grown;
    q->insn_cap = cap;
  }
  VTAInsn* insn = &q->insns[q->ninsns++];
  memset(insn, 0, sizeof(*insn));
  return insn;
}

VTAInsn* vta_rt_insn_create(int stage) {
  VTARTQueue* q = &vta_rt_queue;
  VTAInsn* insn = append_raw();
  if (insn == NULL) return NULL;
  insn->generic.pop_prev_dep = (uint64_t)q->pending_pop_prev[stage];
  insn->generic.pop_next_dep = (uint64_t)q->pending_pop_next[stage];
  q->pending_pop_prev[stage] = 0;
  q->pending_pop_next[stage] = 0;
  return insn;
}

/* A no-op executed by stage: LOAD INP (load), LOAD UOP (compute) or STORE (store), x_size 0. */
static VTAInsn* create_nop(int stage) {
  VTAInsn* insn = vta_rt_insn_create(stage);
  if (insn == NULL) return NULL;
  insn->mem.opcode = stage == kStageStore ? VTA_OPCODE_STORE : VTA_OPCODE_LOAD;
  insn->mem.memory_type = stage == kStageLoad ? VTA_MEM_ID_INP : VTA_MEM_ID_UOP;
  return insn;
}

static void commit_pending_pop(int stage) {
  VTARTQueue* q = &vta_rt_queue;
  if (q->pending_pop_prev[stage] || q->pending_pop_next[stage]) create_nop(stage);
}

/* Set while synchronising, so that the closing no-ops never trigger a nested synchronisation. */
static int in_sync;

int vta_rt_check_insn_overflow(void) {
  VTARTQueue* q = &vta_rt_queue;
  /* Leave room for the closing no-ops and FINISH that synchronisation appends. */
  if (!in_sync && ((uint64_t)q->ninsns + 6) * sizeof(VTAInsn) > vta_rt_xfer_limit()) {
    if (vta_rt_synchronize(1u << 31) != 0) {
      /* The caller may return nothing: keep the failure for the next VTASynchronize. */
      vta_rt_fail("automatic synchronisation (instruction buffer full) failed: %s",
                  TVMGetLastError());
      return -1;
    }
  }
  return 0;
}

/* ---- dependency tokens --------------------------------------------------------------------- */

static int check_qids(const char* what, int from_qid, int to_qid) {
  int ok_range = from_qid >= kStageLoad && from_qid <= kStageStore && to_qid >= kStageLoad &&
                 to_qid <= kStageStore;
  int diff = from_qid - to_qid;
  if (!ok_range || (diff != 1 && diff != -1)) {
    vta_rt_fail("%s(%d, %d): queue ids must be neighbouring stages among 1 (load), 2 (compute), "
                "3 (store); accepted pairs are (1,2), (2,1), (2,3), (3,2)",
                what, from_qid, to_qid);
    return 0;
  }
  return 1;
}

/* Mark a pending pop on stage to_qid (0, or -1 after failing; the queue is not reset). */
static int dep_pop(int from_qid, int to_qid) {
  VTARTQueue* q = &vta_rt_queue;
  if (q->failed || !check_qids("VTADepPop", from_qid, to_qid)) return -1;
  int* pending = from_qid < to_qid ? q->pending_pop_prev : q->pending_pop_next;
  if (pending[to_qid]) commit_pending_pop(to_qid);
  pending[to_qid] = 1;
  return q->failed ? -1 : 0;
}

/* Put a push on the last instruction of stage from_qid, or on a new no-op (0, or -1 after
 * failing; the queue is not reset). */
static int dep_push(int from_qid, int to_qid) {
  VTARTQueue* q = &vta_rt_queue;
  if (q->failed || !check_qids("VTADepPush", from_qid, to_qid)) return -1;
  /* A stage pops before it pushes. */
  commit_pending_pop(from_qid);
  if (q->failed) return -1;
  VTAInsn* last = q->ninsns ? &q->insns[q->ninsns - 1] : NULL;
  if (last == NULL || vta_rt_insn_stage(last) != from_qid ||
      (from_qid < to_qid ? last->generic.push_next_dep : last->generic.push_prev_dep)) {
    last = create_nop(from_qid);
    if (last == NULL) return -1;
  }
  if (from_qid < to_qid) {
    last->generic.push_next_dep = 1;
  } else {
    last->generic.push_prev_dep = 1;
  }
  return 0;
}

/* The public calls return -1 only after reporting the failure and resetting the queue: host
 * code that checks them returns at once and never reaches VTASynchronize. */
int VTADepPop(VTACommandHandle cmd, int from_qid, int to_qid) {
  if (cmd != (VTACommandHandle)&vta_rt_queue) {
    vta_rt_fail("VTADepPop: command handle %p is not the one VTATLSCommandHandle returns", cmd);
    return vta_rt_report();
  }
  if (dep_pop(from_qid, to_qid) != 0) return vta_rt_report();
  return 0;
}

int VTADepPush(VTACommandHandle cmd, int from_qid, int to_qid) {
  if (cmd != (VTACommandHandle)&vta_rt_queue) {
    vta_rt_fail("VTADepPush: command handle %p is not the one VTATLSCommandHandle returns", cmd);
    return vta_rt_report();
  }
  if (dep_push(from_qid, to_qid) != 0 || vta_rt_check_insn_overflow() != 0) {
    return vta_rt_report();
  }
  return 0;
}

/* ---- loads and stores ---------------------------------------------------------------------- */

static uint32_t elem_bytes(uint32_t memory_type) {
  switch (memory_type) {
    case VTA_MEM_ID_UOP: return VTA_UOP_ELEM_BYTES;
    case VTA_MEM_ID_WGT: return VTA_WGT_ELEM_BYTES;
    case VTA_MEM_ID_INP: return VTA_INP_ELEM_BYTES;
    case VTA_MEM_ID_ACC: return VTA_ACC_ELEM_BYTES;
    case VTA_MEM_ID_OUT: return VTA_OUT_ELEM_BYTES;
    case VTA_MEM_ID_ACC_8BIT: return VTA_ACC_8BIT_ELEM_BYTES;
    default: return 0;
  }
}

/* Record a failure unless `value` fits a `width`-bit instruction field; returns whether it fits. */
static bool field_fits(const char* what, const char* name, uint64_t value, unsigned width) {
  if (vta_rt_fits(value, width)) return true;
  vta_rt_fail("%s: %s = %llu does not fit the %u-bit instruction field (at most %llu)", what, name,
              (unsigned long long)value, width, (unsigned long long)(((uint64_t)1 << width) - 1));
  return false;
}

#define CHECK_FIELD(what, name, value, width)                         \
  do {                                                                \
    if (!field_fits((what), (name), (uint64_t)(value), (width))) return; \
  } while (0)

/* Physical element address of a 2-D transfer, checking its DRAM footprint lies in the arena. */
static uint64_t transfer_base(const char* what, const void* buffer, uint32_t offset,
                              uint32_t x_size, uint32_t y_size, uint32_t x_stride,
                              uint32_t eb) {
  uint64_t last = (uint64_t)offset + (uint64_t)(y_size - 1) * x_stride + x_size;
  uint64_t phys = vta_rt_phys(buffer, last * eb, what);
  if (phys == 0) return UINT64_MAX;
  if (phys % eb != 0) {
    vta_rt_fail("%s: buffer at physical address 0x%llx is not aligned to the %u-byte element "
                "of its memory type", what, (unsigned long long)phys, eb);
    return UINT64_MAX;
  }
  return phys / eb + offset;
}

/* The part of a LOAD or STORE that both share: check the command handle, the sizes, the SRAM
 * index and the DRAM range, then append the instruction to `stage` with those fields set.
 * Returns NULL after recording a failure (or when the queue has already failed). */
static VTAInsn* mem_insn(const char* what, VTACommandHandle cmd, int stage, unsigned opcode,
                         uint32_t memory_type, uint32_t sram_index, void* dram_addr,
                         uint32_t elem_offset, uint32_t x_size, uint32_t y_size,
                         uint32_t x_stride) {
  VTARTQueue* q = &vta_rt_queue;
  if (cmd != (VTACommandHandle)q) {
    vta_rt_fail("%s: command handle %p is not the one VTATLSCommandHandle returns", what, cmd);
    return NULL;
  }
  if (q->failed) return NULL;
  if (x_size == 0 || y_size == 0) {
    vta_rt_fail("%s: x_size %u, y_size %u: a transfer moves at least one element", what, x_size,
                y_size);
    return NULL;
  }
  if (!field_fits(what, "x_size", x_size, VTA_MEM_X_SIZE_WIDTH) ||
      !field_fits(what, "y_size", y_size, VTA_MEM_Y_SIZE_WIDTH) ||
      !field_fits(what, "x_stride", x_stride, VTA_MEM_X_STRIDE_WIDTH) ||
      !field_fits(what, opcode == VTA_OPCODE_LOAD ? "dst_sram_index" : "src_sram_index", sram_index,
                  VTA_MEM_SRAM_BASE_WIDTH)) {
    return NULL;
  }
  uint32_t eb = elem_bytes(memory_type);
  uint64_t base = transfer_base(what, dram_addr, elem_offset, x_size, y_size, x_stride, eb);
  if (base == UINT64_MAX || !field_fits(what, "dram_base", base, VTA_MEM_DRAM_BASE_WIDTH)) {
    return NULL;
  }
  VTAInsn* insn = vta_rt_insn_create(stage);
  if (insn == NULL) return NULL;
  insn->mem.opcode = opcode;
  insn->mem.memory_type = memory_type;
  insn->mem.sram_base = sram_index;
  insn->mem.dram_base = base;
  insn->mem.y_size = y_size;
  insn->mem.x_size = x_size;
  insn->mem.x_stride = x_stride;
  return insn;
}

void VTALoadBuffer2D(VTACommandHandle cmd, void* src_dram_addr, uint32_t src_elem_offset,
                     uint32_t x_size, uint32_t y_size, uint32_t x_stride, uint32_t x_pad_before,
                     uint32_t y_pad_before, uint32_t x_pad_after, uint32_t y_pad_after,
                     uint32_t dst_sram_index, uint32_t dst_memory_type) {
  static const char what[] = "VTALoadBuffer2D";
  if (cmd == (VTACommandHandle)&vta_rt_queue && vta_rt_queue.failed) return;
  if (elem_bytes(dst_memory_type) == 0 || dst_memory_type == VTA_MEM_ID_OUT) {
    vta_rt_fail("%s: memory type %u cannot be loaded; accepted: %d (UOP), %d (WGT), %d (INP), "
                "%d (ACC), %d (ACC_8BIT)", what, dst_memory_type, VTA_MEM_ID_UOP, VTA_MEM_ID_WGT,
                VTA_MEM_ID_INP, VTA_MEM_ID_ACC, VTA_MEM_ID_ACC_8BIT);
    return;
  }
  CHECK_FIELD(what, "x_pad_before", x_pad_before, VTA_MEM_X_PAD_0_WIDTH);
  CHECK_FIELD(what, "x_pad_after", x_pad_after, VTA_MEM_X_PAD_1_WIDTH);
  CHECK_FIELD(what, "y_pad_before", y_pad_before, VTA_MEM_Y_PAD_0_WIDTH);
  CHECK_FIELD(what, "y_pad_after", y_pad_after, VTA_MEM_Y_PAD_1_WIDTH);
  int stage = (dst_memory_type == VTA_MEM_ID_INP || dst_memory_type == VTA_MEM_ID_WGT)
                  ? kStageLoad
                  : kStageCompute;
  VTAInsn* insn = mem_insn(what, cmd, stage, VTA_OPCODE_LOAD, dst_memory_type, dst_sram_index,
                           src_dram_addr, src_elem_offset, x_size, y_size, x_stride);
  if (insn == NULL) return;
  insn->mem.y_pad_0 = y_pad_before;
  insn->mem.y_pad_1 = y_pad_after;
  insn->mem.x_pad_0 = x_pad_before;
  insn->mem.x_pad_1 = x_pad_after;
  vta_rt_check_insn_overflow();
}

void VTAStoreBuffer2D(VTACommandHandle cmd, uint32_t src_sram_index, uint32_t src_memory_type,
                      void* dst_dram_addr, uint32_t dst_elem_offset, uint32_t x_size,
                      uint32_t y_size, uint32_t x_stride) {
  static const char what[] = "VTAStoreBuffer2D";
  if (cmd == (VTACommandHandle)&vta_rt_queue && vta_rt_queue.failed) return;
  if (src_memory_type != VTA_MEM_ID_OUT) {
    vta_rt_fail("%s: memory type %u cannot be stored; accepted: %d (OUT)", what,
                src_memory_type, VTA_MEM_ID_OUT);
    return;
  }
  if (mem_insn(what, cmd, kStageStore, VTA_OPCODE_STORE, src_memory_type, src_sram_index,
               dst_dram_addr, dst_elem_offset, x_size, y_size, x_stride) == NULL) {
    return;
  }
  vta_rt_check_insn_overflow();
}

/* ---- serial execution (VTA_DEBUG_FORCE_SERIAL) --------------------------------------------- */

/* Rewrite every token so that each instruction waits for the one before it. A hand-off between
 * the load and store stages, which share no channel, goes through a compute no-op. */
static int rewrite_force_serial(void) {
  VTARTQueue* q = &vta_rt_queue;
  uint32_t n = q->ninsns;
  VTAInsn* old = (VTAInsn*)malloc((size_t)(n ? n : 1) * sizeof(VTAInsn));
  if (old == NULL) {
    vta_rt_fail("VTA runtime: out of host memory rewriting %u instructions", n);
    return -1;
  }
  memcpy(old, q->insns, (size_t)n * sizeof(VTAInsn));
  q->ninsns = 0;
  int prev_stage = kStageNone;
  for (uint32_t i = 0; i < n; ++i) {
    int stage = stage_executing(&old[i]);
    if (prev_stage != kStageNone && prev_stage != stage &&
        (prev_stage == kStageCompute) == (stage == kStageCompute)) {
      /* load <-> store: route through a compute no-op */
      VTAInsn* prev = &q->insns[q->ninsns - 1];
      if (prev_stage < kStageCompute) prev->generic.push_next_dep = 1;
      else prev->generic.push_prev_dep = 1;
      VTAInsn* nop = append_raw();
      if (nop == NULL) break;
      nop->mem.opcode = VTA_OPCODE_LOAD;
      nop->mem.memory_type = VTA_MEM_ID_UOP;
      if (prev_stage < kStageCompute) nop->generic.pop_prev_dep = 1;
      else nop->generic.pop_next_dep = 1;
      prev_stage = kStageCompute;
    }
    VTAInsn* insn = append_raw();
    if (insn == NULL) break;
    *insn = old[i];
    insn->generic.pop_prev_dep = 0;
    insn->generic.pop_next_dep = 0;
    insn->generic.push_prev_dep = 0;
    insn->generic.push_next_dep = 0;
    if (prev_stage != kStageNone && prev_stage != stage) {
      VTAInsn* prev = &q->insns[q->ninsns - 2];
      if (prev_stage < stage) {
        prev->generic.push_next_dep = 1;
        insn->generic.pop_prev_dep = 1;
      } else {
        prev->generic.push_prev_dep = 1;
        insn->generic.pop_next_dep = 1;
      }
    }
    prev_stage = stage;
  }
  free(old);
  return q->failed ? -1 : 0;
}

/* ---- synchronisation ----------------------------------------------------------------------- */

static int synchronize(uint32_t wait_cycles);

int vta_rt_synchronize(uint32_t wait_cycles) {
  if (vta_rt_queue.record != NULL) {
    /* Inside a finit callback: fail without resetting, the recording reports it. */
    vta_rt_fail("VTASynchronize: called inside the finit callback of a kernel recording");
    return -1;
  }
  in_sync = 1;
  int rc = synchronize(wait_cycles);
  in_sync = 0;
  return rc;
}

static int synchronize(uint32_t wait_cycles) {
  VTARTQueue* q = &vta_rt_queue;
  if (q->failed) return vta_rt_report();
  if (vta_rt_ready() != 0) return vta_rt_report();
  int serial = (q->debug_flag & VTA_DEBUG_FORCE_SERIAL) != 0;
  if (!serial) {
    /* The compute stage waits for the other two; FINISH then carries no pops. */
    dep_push(kStageStore, kStageCompute);
    dep_push(kStageLoad, kStageCompute);
    dep_pop(kStageStore, kStageCompute);
    dep_pop(kStageLoad, kStageCompute);
    commit_pending_pop(kStageCompute);
  } else {
    for (int s = 0; s < 4; ++s) q->pending_pop_prev[s] = q->pending_pop_next[s] = 0;
  }
  VTAInsn* finish = vta_rt_insn_create(kStageCompute);
  if (finish != NULL) finish->gemm.opcode = VTA_OPCODE_FINISH;
  if (!q->failed && serial) rewrite_force_serial();
  if (q->failed) return vta_rt_report();

  uint64_t insn_bytes = (uint64_t)q->ninsns * sizeof(VTAInsn);
  if (insn_bytes > VTA_RT_MAX_XFER) {
    vta_rt_fail("VTASynchronize: %u instructions (%llu bytes) exceed the %u-byte staging buffer",
                q->ninsns, (unsigned long long)insn_bytes, (unsigned)VTA_RT_MAX_XFER);
    return vta_rt_report();
  }
  char* arena = (char*)(uintptr_t)q->arena_base;
  if (q->nstaged != 0) {
    memcpy(arena + q->uop_phys, q->staged, (size_t)q->nstaged * sizeof(VTAUop));
  }
  memcpy(arena + q->insn_phys, q->insns, (size_t)insn_bytes);

  if (q->debug_flag & VTA_DEBUG_DUMP_INSN) q->dump_fn(q->insn_phys, q->ninsns);

  char err[VTA_RT_ERROR_BYTES - 64];
  err[0] = '\0';
  int rc = q->run_fn(q->insn_phys, q->ninsns, wait_cycles, err, (uint32_t)sizeof(err));
  if (rc != 0) {
    vta_rt_fail("VTASynchronize: the device failed running %u instructions: %s", q->ninsns,
                err[0] ? err : "no reason given");
    return vta_rt_report();
  }
  vta_rt_reset_window();
  return 0;
}
