/*
 * The VTA runtime C API that host code calls (reference tvm-vta-software.md 4.1).
 *
 * Signatures follow upstream vta/runtime/runtime.h, with one deliberate difference: calls that
 * can fail at run time return int (0 = success, -1 = failure with the message recorded through
 * TVMAPISetLastError). A failure also makes the command queue "sticky": later calls are ignored
 * until VTASynchronize reports the failure (returns -1) and resets the queue. Host code should
 * therefore write `if (VTASynchronize(cmd, 1u << 31) != 0) return -1;`.
 */
#ifndef VTA_RUNTIME_H_
#define VTA_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VTA_MEMCPY_H2D 1
#define VTA_MEMCPY_D2H 2
#define VTA_MEMCPY_D2D 3

#define VTA_DEBUG_DUMP_INSN (1 << 1)
#define VTA_DEBUG_DUMP_UOP (1 << 2)
#define VTA_DEBUG_SKIP_READ_BARRIER (1 << 3)
#define VTA_DEBUG_SKIP_WRITE_BARRIER (1 << 4)
#define VTA_DEBUG_FORCE_SERIAL (1 << 5)

typedef void* VTACommandHandle;

/* ---- buffers (device memory lives in the shared DRAM arena) ------------------------------- */
void* VTABufferAlloc(size_t size);
void VTABufferFree(void* buffer);
void VTABufferCopy(const void* from, size_t from_offset, void* to, size_t to_offset, size_t size,
                   int kind_mask);
void* VTABufferCPUPtr(VTACommandHandle cmd, void* buffer);
void VTAWriteBarrier(VTACommandHandle cmd, void* buffer, uint32_t elem_bits, uint32_t start,
                     uint32_t extent);
void VTAReadBarrier(VTACommandHandle cmd, void* buffer, uint32_t elem_bits, uint32_t start,
                    uint32_t extent);

/* ---- the command queue ------------------------------------------------------------------- */
VTACommandHandle VTATLSCommandHandle(void);
void VTARuntimeShutdown(void);
void VTASetDebugMode(VTACommandHandle cmd, int debug_flag);

void VTALoadBuffer2D(VTACommandHandle cmd, void* src_dram_addr, uint32_t src_elem_offset,
                     uint32_t x_size, uint32_t y_size, uint32_t x_stride, uint32_t x_pad_before,
                     uint32_t y_pad_before, uint32_t x_pad_after, uint32_t y_pad_after,
                     uint32_t dst_sram_index, uint32_t dst_memory_type);
void VTAStoreBuffer2D(VTACommandHandle cmd, uint32_t src_sram_index, uint32_t src_memory_type,
                      void* dst_dram_addr, uint32_t dst_elem_offset, uint32_t x_size,
                      uint32_t y_size, uint32_t x_stride);

/* ---- micro-op kernels (valid only inside the finit callback of VTAPush*Op) ----------------- */
void VTAUopPush(uint32_t mode, uint32_t reset_out, uint32_t dst_index, uint32_t src_index,
                uint32_t wgt_index, uint32_t opcode, uint32_t use_imm, int32_t imm_val);
void VTAUopLoopBegin(uint32_t extent, uint32_t dst_factor, uint32_t src_factor,
                     uint32_t wgt_factor);
void VTAUopLoopEnd(void);
int VTAPushGEMMOp(void** uop_handle, int (*finit)(void*), void* signature, int nbytes);
int VTAPushALUOp(void** uop_handle, int (*finit)(void*), void* signature, int nbytes);

/* ---- dependencies and execution ----------------------------------------------------------- */
int VTADepPush(VTACommandHandle cmd, int from_qid, int to_qid);
int VTADepPop(VTACommandHandle cmd, int from_qid, int to_qid);
int VTASynchronize(VTACommandHandle cmd, uint32_t wait_cycles);

#ifdef __cplusplus
}
#endif

#endif /* VTA_RUNTIME_H_ */
