/*
 * Private state of the VTA runtime (runtime_core.c, runtime_insn.c, runtime_uop.c).
 *
 * One library is built per hardware configuration, so the runtime keeps its single command
 * queue in file-level state, as upstream keeps a process-wide queue behind
 * VTATLSCommandHandle (reference tvm-vta-software.md 4.1-4.2).
 *
 * The runtime never owns memory of the accelerator: device buffers live in the DRAM arena of the
 * Python process, reached through the callbacks that vta/runtime/vta_bridge.py installs with
 * VTABridgeInstall. A device buffer handle is a host pointer into that arena; its physical
 * address is the pointer minus the arena base.
 */
#ifndef VTA_RT_INTERNAL_H_
#define VTA_RT_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include "hw_spec.h"
#include "tvm_c_abi.h"
#include "vta_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of each device staging buffer (instructions, micro-ops), as upstream VTA_MAX_XFER. */
#ifndef VTA_RT_MAX_XFER
#define VTA_RT_MAX_XFER (1u << 25)
#endif

/* Longest error message kept by the queue. */
#define VTA_RT_ERROR_BYTES 1024

/* Pipeline stages, numbered like the queue ids of the runtime API. */
enum { kStageNone = 0, kStageLoad = 1, kStageCompute = 2, kStageStore = 3 };

/* ---- callbacks into Python (see VTABridgeInstall) ------------------------------------------ */

/* Allocate nbytes in the arena: returns the physical address, or 0 after writing a message. */
typedef uint64_t (*VTABridgeAllocFn)(uint64_t nbytes, char* err, uint32_t err_len);
/* Free the allocation starting at phys: 0, or -1 after writing a message. */
typedef int (*VTABridgeFreeFn)(uint64_t phys, char* err, uint32_t err_len);
/* Run insn_count instructions at insn_phys: 0, or -1 after writing a message (the Python side
 * also keeps the exception so the caller of the packed function sees it). */
typedef int (*VTABridgeRunFn)(uint64_t insn_phys, uint32_t insn_count, uint32_t wait_cycles,
                              char* err, uint32_t err_len);
/* Print the instruction stream at insn_phys in the upstream dump format. */
typedef int (*VTABridgeDumpFn)(uint64_t insn_phys, uint32_t insn_count);
/* Print one line of text (used for DUMP_UOP). */
typedef void (*VTABridgePrintFn)(const char* text);

/* Exported for the Python bridge: install the arena and callbacks. Returns 0, or -1 with the
 * last error set when an argument is invalid. */
int VTABridgeInstall(uint64_t arena_base, uint64_t arena_size, VTABridgeAllocFn alloc_fn,
                     VTABridgeFreeFn free_fn, VTABridgeRunFn run_fn, VTABridgeDumpFn dump_fn,
                     VTABridgePrintFn print_fn);
/* Exported for tests: lower the staging-buffer limit (bytes) to exercise the automatic
 * synchronisation; 0 restores VTA_RT_MAX_XFER. Returns the limit in force. */
uint32_t VTABridgeSetXferLimit(uint32_t nbytes);
/* Exported for the Python side: when the last module of this configuration closes, shut the
 * queue down (VTARuntimeShutdown) and give the two staging buffers back to the arena. */
void VTABridgeRelease(void);
/* Exported for tests: how many of the two staging buffers are allocated in the arena. */
uint32_t VTABridgeStagingBuffers(void);
/* Exported for tests and tools: the message of the failure the queue is holding, or NULL. */
const char* VTABridgePendingError(void);

/* ---- micro-op kernels ---------------------------------------------------------------------- */

typedef struct {
  uint32_t extent;
  uint32_t dst_factor;
  uint32_t src_factor;
  uint32_t wgt_factor;
} VTARTLoop;

typedef struct {
  int64_t key;         /* 0 for a 0-byte signature, value + 1 for a 4-byte one */
  int is_alu;          /* recorded by VTAPushALUOp (1) or VTAPushGEMMOp (0) */
  int has_uop;         /* kernel-wide fields below are set by the first uop */
  uint32_t reset;
  uint32_t opcode;
  uint32_t use_imm;
  int32_t imm;
  VTAUop* uops;
  uint32_t nuops;
  uint32_t cap;
  VTARTLoop loops[2];
  uint32_t nloops;
  uint32_t open_loops;
  int resident;        /* holds [sram_begin, sram_end) of the uop SRAM in this window */
  uint32_t sram_begin;
  uint32_t sram_end;
} VTARTKernel;

/* What a static uop handle of host code points to: the kernels of one site, by signature. */
typedef struct {
  VTARTKernel** items;
  uint32_t n;
  uint32_t cap;
} VTARTKernelMap;

/* ---- the command queue --------------------------------------------------------------------- */

typedef struct {
  /* bridge */
  int installed;
  uint64_t arena_base;
  uint64_t arena_size;
  VTABridgeAllocFn alloc_fn;
  VTABridgeFreeFn free_fn;
  VTABridgeRunFn run_fn;
  VTABridgeDumpFn dump_fn;
  VTABridgePrintFn print_fn;

  /* device staging buffers (physical addresses in the arena; 0 = not yet allocated) */
  uint64_t insn_phys;
  uint64_t uop_phys;
  uint32_t xfer_bytes;

  /* instruction stream of the current window */
  VTAInsn* insns;
  uint32_t ninsns;
  uint32_t insn_cap;
  int pending_pop_prev[4];
  int pending_pop_next[4];

  /* micro-ops of the current window, in the order their LOAD UOPs were emitted */
  VTAUop* staged;
  uint32_t nstaged;
  uint32_t staged_cap;
  VTARTKernel** resident;
  uint32_t nresident;
  uint32_t resident_cap;
  uint32_t uop_cursor;    /* next free uop SRAM entry */

  /* kernel recording */
  VTARTKernel* record;

  int debug_flag;
  int failed;
  char error[VTA_RT_ERROR_BYTES];
} VTARTQueue;

extern VTARTQueue vta_rt_queue;

/* ---- helpers shared by the three source files ---------------------------------------------- */

/* Record a failure: keep the first message, make the queue sticky-failed, set the last error. */
void vta_rt_fail(const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Report the held failure (set the last error again) and return -1. */
int vta_rt_report(void);
/* Forget the instruction stream, pending pops, uop residency and the failure. */
void vta_rt_reset_window(void);
/* Make sure the bridge is installed and the staging buffers exist (0, or -1 after failing). */
int vta_rt_ready(void);
/* Physical address of a device buffer handle, checked to lie in the arena with nbytes after it
 * (0 after failing; what names the caller). */
uint64_t vta_rt_phys(const void* handle, uint64_t nbytes, const char* what);
/* 1 when value fits in an unsigned field of width bits. */
int vta_rt_fits(uint64_t value, unsigned width);
/* 1 when value fits in a signed (two's complement) field of width bits. */
int vta_rt_fits_signed(int64_t value, unsigned width);
/* Number of bytes of the staging buffers in force. */
uint32_t vta_rt_xfer_limit(void);

/* runtime_insn.c */
VTAInsn* vta_rt_insn_create(int stage);  /* new instruction carrying the stage's pending pops */
int vta_rt_insn_stage(const VTAInsn* insn);
int vta_rt_check_insn_overflow(void);  /* automatic synchronisation when the stream is full */
int vta_rt_synchronize(uint32_t wait_cycles);

/* runtime_uop.c */
void vta_rt_uop_reset_residency(void);

#ifdef __cplusplus
}
#endif

#endif /* VTA_RT_INTERNAL_H_ */
