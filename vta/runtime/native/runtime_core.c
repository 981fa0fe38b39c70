/*
 * VTA runtime, part 1: the bridge to Python, failure handling, device buffers and the command
 * handle (reference tvm-vta-software.md 4.1, 4.2, 5.7).
 *
 * Failure model: every bad input records a message with TVMAPISetLastError and makes the queue
 * sticky-failed. Calls made while the queue is failed do nothing. The failure is reported (and
 * the queue reset) by the next call that returns int: VTASynchronize, or earlier
 * VTAPushGEMMOp/VTAPushALUOp/VTADepPush/VTADepPop, whose callers return at once by the
 * generated-code convention (so a failed call never leaves the queue failed for the next host
 * call). Nothing here aborts the process.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vta_rt_internal.h"

VTARTQueue vta_rt_queue;

/* ---- failures ------------------------------------------------------------------------------ */

void vta_rt_fail(const char* fmt, ...) {
  VTARTQueue* q = &vta_rt_queue;
  if (!q->failed) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(q->error, sizeof(q->error), fmt, ap);
    va_end(ap);
    q->failed = 1;
  }
  TVMAPISetLastError(q->error);
}

int vta_rt_report(void) {
  VTARTQueue* q = &vta_rt_queue;
  TVMAPISetLastError(q->failed ? q->error : "VTA runtime: unknown failure");
  vta_rt_reset_window();
  return -1;
}

const char* VTABridgePendingError(void) {
  return vta_rt_queue.failed ? vta_rt_queue.error : NULL;
}

void vta_rt_reset_window(void) {
  VTARTQueue* q = &vta_rt_queue;
  q->ninsns = 0;
  for (int i = 0; i < 4; ++i) {
    q->pending_pop_prev[i] = 0;
    q->pending_pop_next[i] = 0;
  }
  vta_rt_uop_reset_residency();
  q->record = NULL;
  q->failed = 0;
  q->error[0] = '\0';
}

/* ---- checks -------------------------------------------------------------------------------- */

int vta_rt_fits(uint64_t value, unsigned width) {
  return width >= 64 || value < ((uint64_t)1 << width);
}

int vta_rt_fits_signed(int64_t value, unsigned width) {
  if (width >= 64) return 1;
  int64_t lo = -((int64_t)1 << (width - 1));
  int64_t hi = ((int64_t)1 << (width - 1)) - 1;
  return value >= lo && value <= hi;
}

uint32_t vta_rt_xfer_limit(void) {
  return vta_rt_queue.xfer_bytes ? vta_rt_queue.xfer_bytes : VTA_RT_MAX_XFER;
}

uint32_t VTABridgeSetXferLimit(uint32_t nbytes) {
  VTARTQueue* q = &vta_rt_queue;
  /* The staging buffers are allocated with the full size, so a smaller limit always fits. */
  if (nbytes > VTA_RT_MAX_XFER) nbytes = VTA_RT_MAX_XFER;
  if (nbytes != 0 && nbytes < 16 * 16) nbytes = 16 * 16;
  q->xfer_bytes = nbytes;
  return vta_rt_xfer_limit();
}

static int bridge_installed(const char* what) {
  if (!vta_rt_queue.installed) {
    vta_rt_fail("%s: the VTA runtime has no DRAM arena: load it through "
                "vta.runtime.runtime_library(env) so that vta.runtime.vta_bridge installs one",
                what);
    return 0;
  }
  return 1;
}

uint64_t vta_rt_phys(const void* handle, uint64_t nbytes, const char* what) {
  VTARTQueue* q = &vta_rt_queue;
  if (!bridge_installed(what)) return 0;
  uint64_t p = (uint64_t)(uintptr_t)handle;
  if (handle == NULL) {
    vta_rt_fail("%s: the buffer pointer is NULL; pass the data pointer of an ext_dev array", what);
    return 0;
  }
  if (p <= q->arena_base || p >= q->arena_base + q->arena_size ||
      nbytes > q->arena_base + q->arena_size - p) {
    vta_rt_fail("%s: pointer %p (+%llu bytes) is not inside the VTA DRAM arena [0x%llx, 0x%llx); "
                "pass the data pointer of an ext_dev array or of VTABufferAlloc",
                what, handle, (unsigned long long)nbytes, (unsigned long long)q->arena_base,
                (unsigned long long)(q->arena_base + q->arena_size));
    return 0;
  }
  return p - q->arena_base;
}

/* ---- the bridge ---------------------------------------------------------------------------- */

int VTABridgeInstall(uint64_t arena_base, uint64_t arena_size, VTABridgeAllocFn alloc_fn,
                     VTABridgeFreeFn free_fn, VTABridgeRunFn run_fn, VTABridgeDumpFn dump_fn,
                     VTABridgePrintFn print_fn) {
  VTARTQueue* q = &vta_rt_queue;
  if (arena_base == 0 || arena_size == 0 || alloc_fn == NULL || free_fn == NULL ||
      run_fn == NULL || dump_fn == NULL || print_fn == NULL) {
    TVMAPISetLastError("VTABridgeInstall: the arena and all five callbacks are required");
    return -1;
  }
  if (q->installed && (q->arena_base != arena_base || q->arena_size != arena_size)) {
    /* A new arena: staging buffers of the old one are gone with it. */
    q->insn_phys = 0;
    q->uop_phys = 0;
  }
  q->arena_base = arena_base;
  q->arena_size = arena_size;
  q->alloc_fn = alloc_fn;
  q->free_fn = free_fn;
  q->run_fn = run_fn;
  q->dump_fn = dump_fn;
  q->print_fn = print_fn;
  q->installed = 1;
  return 0;
}

static uint64_t arena_alloc(uint64_t nbytes, const char* what) {
  VTARTQueue* q = &vta_rt_queue;
  char err[VTA_RT_ERROR_BYTES / 2];
  err[0] = '\0';
  uint64_t phys = q->alloc_fn(nbytes, err, (uint32_t)sizeof(err));
  if (phys == 0 || phys >= q->arena_size || nbytes > q->arena_size - phys) {
    vta_rt_fail("%s: cannot allocate %llu bytes of VTA DRAM: %s", what,
                (unsigned long long)nbytes, err[0] ? err : "the allocator returned no address");
    return 0;
  }
  return phys;
}

int vta_rt_ready(void) {
  VTARTQueue* q = &vta_rt_queue;
  if (!bridge_installed("VTA runtime")) return -1;
  if (q->insn_phys == 0) {
    q->insn_phys = arena_alloc(VTA_RT_MAX_XFER, "instruction staging buffer");
    if (q->insn_phys == 0) return -1;
  }
  if (q->uop_phys == 0) {
    q->uop_phys = arena_alloc(VTA_RT_MAX_XFER, "micro-op staging buffer");
    if (q->uop_phys == 0) return -1;
  }
  return 0;
}

/* ---- device buffers ------------------------------------------------------------------------ */

void* VTABufferAlloc(size_t size) {
  VTARTQueue* q = &vta_rt_queue;
  if (!bridge_installed("VTABufferAlloc")) return NULL;
  if (size == 0) {
    vta_rt_fail("VTABufferAlloc: size 0 requested; a buffer needs at least one byte");
    return NULL;
  }
  uint64_t phys = arena_alloc(size, "VTABufferAlloc");
  if (phys == 0) return NULL;
  return (void*)(uintptr_t)(q->arena_base + phys);
}

void VTABufferFree(void* buffer) {
  VTARTQueue* q = &vta_rt_queue;
  if (buffer == NULL) return;
  uint64_t phys = vta_rt_phys(buffer, 1, "VTABufferFree");
  if (phys == 0) return;
  char err[VTA_RT_ERROR_BYTES / 2];
  err[0] = '\0';
  if (q->free_fn(phys, err, (uint32_t)sizeof(err)) != 0) {
    vta_rt_fail("VTABufferFree: %s", err[0] ? err : "the arena refused the address");
  }
}

void VTABufferCopy(const void* from, size_t from_offset, void* to, size_t to_offset, size_t size,
                   int kind_mask) {
  if (kind_mask < 0 || kind_mask > 3) {
    vta_rt_fail("VTABufferCopy: kind_mask %d is not one of 0..3 (bit value 2: source on the "
                "device, bit value 1: destination on the device)", kind_mask);
    return;
  }
  if (size == 0) return;
  if (from == NULL || to == NULL) {
    vta_rt_fail("VTABufferCopy: NULL %s pointer", from == NULL ? "source" : "destination");
    return;
  }
  const char* src = (const char*)from + from_offset;
  char* dst = (char*)to + to_offset;
  if ((kind_mask & 2) && vta_rt_phys(src, size, "VTABufferCopy (source)") == 0) return;
  if ((kind_mask & 1) && vta_rt_phys(dst, size, "VTABufferCopy (destination)") == 0) return;
  /* The arena is coherent host memory: a copy is a memmove (regions may overlap for D2D). */
  memmove(dst, src, size);
}

void* VTABufferCPUPtr(VTACommandHandle cmd, void* buffer) {
  (void)cmd;
  /* A device buffer handle is already the host address of its bytes. */
  return buffer;
}

void VTAWriteBarrier(VTACommandHandle cmd, void* buffer, uint32_t elem_bits, uint32_t start,
                     uint32_t extent) {
  /* The simulated arena is coherent: nothing to invalidate. */
  (void)cmd;
  (void)buffer;
  (void)elem_bits;
  (void)start;
  (void)extent;
}

void VTAReadBarrier(VTACommandHandle cmd, void* buffer, uint32_t elem_bits, uint32_t start,
                    uint32_t extent) {
  /* The simulated arena is coherent: nothing to flush. */
  (void)cmd;
  (void)buffer;
  (void)elem_bits;
  (void)start;
  (void)extent;
}

/* ---- the command handle -------------------------------------------------------------------- */

VTACommandHandle VTATLSCommandHandle(void) {
  /* One process-wide queue, as upstream (despite the name it is not thread-local). */
  return (VTACommandHandle)&vta_rt_queue;
}

static int check_cmd(VTACommandHandle cmd, const char* what) {
  if (cmd != (VTACommandHandle)&vta_rt_queue) {
    vta_rt_fail("%s: command handle %p is not the one VTATLSCommandHandle returns", what, cmd);
    return 0;
  }
  return 1;
}

void VTASetDebugMode(VTACommandHandle cmd, int debug_flag) {
  if (!check_cmd(cmd, "VTASetDebugMode")) return;
  vta_rt_queue.debug_flag = debug_flag;
}

void VTARuntimeShutdown(void) {
  VTARTQueue* q = &vta_rt_queue;
  vta_rt_reset_window();
  free(q->insns);
  q->insns = NULL;
  q->insn_cap = 0;
  free(q->staged);
  q->staged = NULL;
  q->staged_cap = 0;
  free(q->resident);
  q->resident = NULL;
  q->resident_cap = 0;
  q->debug_flag = 0;
  /* The staging buffers stay allocated in the arena for the next use of the queue. Recorded
   * kernels are owned by the uop handles of host code and live as long as the process. */
}

void VTABridgeRelease(void) {
  VTARTQueue* q = &vta_rt_queue;
  VTARuntimeShutdown();
  if (!q->installed) return;
  char err[VTA_RT_ERROR_BYTES / 2];
  /* Give the staging buffers back to the arena; vta_rt_ready allocates them again on next use. */
  if (q->insn_phys != 0) {
    err[0] = '\0';
    q->free_fn(q->insn_phys, err, (uint32_t)sizeof(err));
    q->insn_phys = 0;
  }
  if (q->uop_phys != 0) {
    err[0] = '\0';
    q->free_fn(q->uop_phys, err, (uint32_t)sizeof(err));
    q->uop_phys = 0;
  }
}

uint32_t VTABridgeStagingBuffers(void) {
  return (vta_rt_queue.insn_phys != 0) + (vta_rt_queue.uop_phys != 0);
}

int VTASynchronize(VTACommandHandle cmd, uint32_t wait_cycles) {
  if (!check_cmd(cmd, "VTASynchronize")) return vta_rt_report();
  return vta_rt_synchronize(wait_cycles);
}
