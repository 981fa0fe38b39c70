/*
 * Host functions that misuse the VTA runtime API, one mistake each. Every entry point takes one
 * ext_dev int32 tensor of shape (1, 4, 1, 16) (four ACC tiles) and returns -1 with the message
 * the runtime recorded; none of them may bring the process down.
 */
#include "common.h"

static void* handles[8];

static void* arg_data(TVMValue* args, int num_args) {
  if (num_args != 1) return NULL;
  return ((DLTensor*)args[0].v_handle)->data;
}

#define ENTRY(name)                                                                          \
  int name(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value,          \
           int* out_ret_tcode, void* resource_handle)
#define UNUSED_ENTRY_ARGS                                                                    \
  (void)type_codes;                                                                          \
  (void)out_ret_value;                                                                       \
  (void)out_ret_tcode;                                                                       \
  (void)resource_handle

static int three_loops_init(void* closure) {
  (void)closure;
  VTAUopLoopBegin(2, 1, 0, 0);
  VTAUopLoopBegin(2, 1, 0, 0);
  VTAUopLoopBegin(2, 1, 0, 0);
  VTAUopPush(0, 1, 0, 0, 0, 0, 0, 0);
  VTAUopLoopEnd();
  VTAUopLoopEnd();
  VTAUopLoopEnd();
  return 0;
}

/* A GEMM kernel with three hardware loops: VTAPushGEMMOp fails. */
ENTRY(three_loops) {
  UNUSED_ENTRY_ARGS;
  (void)args;
  (void)num_args;
  if (VTAPushGEMMOp(&handles[0], three_loops_init, NULL, 0) != 0) return -1;
  return VTASynchronize(VTATLSCommandHandle(), 1u << 31);
}

/* A load from a host pointer outside the DRAM arena: reported by VTASynchronize. */
ENTRY(foreign_pointer) {
  UNUSED_ENTRY_ARGS;
  (void)args;
  (void)num_args;
  static int32_t host_memory[4 * 16];
  VTACommandHandle cmd = VTATLSCommandHandle();
  VTALoadBuffer2D(cmd, host_memory, 0, 4, 1, 4, 0, 0, 0, 0, 0, 3);
  return VTASynchronize(cmd, 1u << 31);
}

/* A uop pushed outside any kernel recording. */
ENTRY(uop_outside_kernel) {
  UNUSED_ENTRY_ARGS;
  (void)args;
  (void)num_args;
  VTAUopPush(0, 0, 0, 0, 0, 0, 0, 0);
  return VTASynchronize(VTATLSCommandHandle(), 1u << 31);
}

static int add_init(void* closure) {
  (void)closure;
  VTAUopLoopBegin(4, 1, 1, 0);
  VTAUopPush(1, 0, 0, 0, 0, 2, 0, 0);
  VTAUopLoopEnd();
  return 0;
}

/* A kernel signature of 8 bytes (accepted: 0 or 4). */
ENTRY(long_signature) {
  UNUSED_ENTRY_ARGS;
  (void)args;
  (void)num_args;
  int64_t signature = 7;
  if (VTAPushALUOp(&handles[1], add_init, &signature, 8) != 0) return -1;
  return VTASynchronize(VTATLSCommandHandle(), 1u << 31);
}

/* x_size 70000 does not fit the 16-bit field. */
ENTRY(field_too_wide) {
  UNUSED_ENTRY_ARGS;
  VTACommandHandle cmd = VTATLSCommandHandle();
  VTALoadBuffer2D(cmd, arg_data(args, num_args), 0, 70000, 1, 70000, 0, 0, 0, 0, 0, 3);
  return VTASynchronize(cmd, 1u << 31);
}

static int big_imm_init(void* closure) {
  (void)closure;
  VTAUopPush(1, 0, 0, 0, 0, 2, 1, 40000);
  return 0;
}

/* An ALU immediate of 40000 does not fit the 16-bit signed field. */
ENTRY(imm_too_wide) {
  UNUSED_ENTRY_ARGS;
  (void)args;
  (void)num_args;
  if (VTAPushALUOp(&handles[2], big_imm_init, NULL, 0) != 0) return -1;
  return VTASynchronize(VTATLSCommandHandle(), 1u << 31);
}

/* The store waits for a compute->store token that no instruction pushes. */
ENTRY(deadlock) {
  UNUSED_ENTRY_ARGS;
  void* x = arg_data(args, num_args);
  VTACommandHandle cmd = VTATLSCommandHandle();
  VTALoadBuffer2D(cmd, x, 0, 4, 1, 4, 0, 0, 0, 0, 0, 3);
  if (VTADepPop(cmd, 2, 3) != 0) return -1;
  VTAStoreBuffer2D(cmd, 0, 4, x, 0, 4, 1, 4);
  return VTASynchronize(cmd, 1u << 31);
}

/* Queue ids 1 -> 3: the load and store stages share no token channel. */
ENTRY(load_to_store_token) {
  UNUSED_ENTRY_ARGS;
  (void)args;
  (void)num_args;
  VTACommandHandle cmd = VTATLSCommandHandle();
  if (VTADepPush(cmd, 1, 3) != 0) return -1;
  return VTASynchronize(cmd, 1u << 31);
}

/* A uop-loop register call sequence that forgets VTAUopLoopEnd. */
static int open_loop_init(void* closure) {
  (void)closure;
  VTAUopLoopBegin(4, 1, 1, 0);
  VTAUopPush(1, 0, 0, 0, 0, 2, 0, 0);
  return 0;
}

ENTRY(loop_left_open) {
  UNUSED_ENTRY_ARGS;
  (void)args;
  (void)num_args;
  if (VTAPushALUOp(&handles[3], open_loop_init, NULL, 0) != 0) return -1;
  return VTASynchronize(VTATLSCommandHandle(), 1u << 31);
}

/* The deadlock of `deadlock`, followed by enough loads that the instruction buffer (lowered by
 * the test) fills and synchronises by itself: the failure must survive to VTASynchronize. */
ENTRY(deadlock_then_more) {
  UNUSED_ENTRY_ARGS;
  void* x = arg_data(args, num_args);
  VTACommandHandle cmd = VTATLSCommandHandle();
  if (VTADepPop(cmd, 2, 3) != 0) return -1;
  VTAStoreBuffer2D(cmd, 0, 4, x, 0, 4, 1, 4);
  for (int i = 0; i < 40; ++i) VTALoadBuffer2D(cmd, x, 0, 4, 1, 4, 0, 0, 0, 0, 0, 3);
  return VTASynchronize(cmd, 1u << 31);
}

static void* outer_handle = NULL;
static void* inner_handle = NULL;

static int inner_init(void* closure) {
  (void)closure;
  VTAUopPush(0, 1, 0, 0, 0, 0, 0, 0);
  return 0;
}

static int outer_init(void* closure) {
  (void)closure;
  VTAUopPush(0, 1, 0, 0, 0, 0, 0, 0);
  if (VTAPushGEMMOp(&inner_handle, inner_init, NULL, 0) != 0) return -1;
  return 0;
}

/* A kernel's finit that pushes another kernel. */
ENTRY(nested_recording) {
  UNUSED_ENTRY_ARGS;
  (void)args;
  (void)num_args;
  if (VTAPushGEMMOp(&outer_handle, outer_init, NULL, 0) != 0) return -1;
  return VTASynchronize(VTATLSCommandHandle(), 1u << 31);
}

static void* sync_handle = NULL;

static int sync_init(void* closure) {
  (void)closure;
  VTAUopPush(0, 1, 0, 0, 0, 0, 0, 0);
  VTASynchronize(VTATLSCommandHandle(), 1u << 31);
  VTAUopPush(0, 1, 1, 0, 0, 0, 0, 0);
  return 0;
}

/* A kernel's finit that synchronises. */
ENTRY(sync_in_recording) {
  UNUSED_ENTRY_ARGS;
  (void)args;
  (void)num_args;
  if (VTAPushGEMMOp(&sync_handle, sync_init, NULL, 0) != 0) return -1;
  return VTASynchronize(VTATLSCommandHandle(), 1u << 31);
}

/* Generated-code style: the foreign pointer is reported by the next checked call (VTADepPush),
 * and the function returns before VTASynchronize. */
ENTRY(foreign_then_push) {
  UNUSED_ENTRY_ARGS;
  (void)args;
  (void)num_args;
  static int32_t host_memory[4 * 16];
  VTACommandHandle cmd = VTATLSCommandHandle();
  VTALoadBuffer2D(cmd, host_memory, 0, 4, 1, 4, 0, 0, 0, 0, 0, 3);
  if (VTADepPush(cmd, 2, 3) != 0) return -1;
  return VTASynchronize(cmd, 1u << 31);
}
