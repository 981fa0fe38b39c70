/*
 * The blocked GEMM of the matrix-multiply optimisation tutorial, written by hand as generated
 * host code would be (reference tvm-vta-software.md 3.3): data int8 (1, 64, 1, 16), weight int8
 * (64, 64, 16, 16), res int8 (1, 64, 1, 16), res = int8(min(max(data . weight^T >> 8, 0), 127)),
 * in blocks of 16 x 16 tiles, with the ALU epilogue and one store per output tile.
 */
#include "common.h"

static void* reset_handle = NULL;
static void* gemm_handle = NULL;
static void* shr_handle = NULL;
static void* max_handle = NULL;
static void* min_handle = NULL;

static int reset_init(void* closure) {
  (void)closure;
  VTAUopLoopBegin(16, 1, 0, 0);
  VTAUopPush(0, 1, 0, 0, 0, 0, 0, 0);
  VTAUopLoopEnd();
  return 0;
}

/* ACC[co] += INP[ic] . WGT[co * 16 + ic]^T over 16 output and 16 input tiles. */
static int gemm_init(void* closure) {
  (void)closure;
  VTAUopLoopBegin(16, 1, 0, 16);
  VTAUopLoopBegin(16, 0, 1, 1);
  VTAUopPush(0, 0, 0, 0, 0, 0, 0, 0);
  VTAUopLoopEnd();
  VTAUopLoopEnd();
  return 0;
}

static int alu_imm(uint32_t opcode, int32_t imm) {
  VTAUopLoopBegin(16, 1, 1, 0);
  VTAUopPush(1, 0, 0, 0, 0, opcode, 1, imm);
  VTAUopLoopEnd();
  return 0;
}

static int shr_init(void* closure) {
  (void)closure;
  return alu_imm(3 /* SHR */, 8);
}

static int max_init(void* closure) {
  (void)closure;
  return alu_imm(1 /* MAX */, 0);
}

static int min_init(void* closure) {
  (void)closure;
  return alu_imm(0 /* MIN */, 127);
}

int blocked_gemm(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value,
                 int* out_ret_tcode, void* resource_handle) {
  (void)out_ret_value;
  (void)out_ret_tcode;
  (void)resource_handle;
  static const int64_t data_shape[4] = {1, 64, 1, 16};
  static const int64_t weight_shape[4] = {64, 64, 16, 16};
  if (check_num_args("blocked_gemm", num_args, 3) != 0) return -1;
  if (check_tensor("blocked_gemm", args, type_codes, 0, kDLInt, 8, data_shape) != 0) return -1;
  if (check_tensor("blocked_gemm", args, type_codes, 1, kDLInt, 8, weight_shape) != 0) return -1;
  if (check_tensor("blocked_gemm", args, type_codes, 2, kDLInt, 8, data_shape) != 0) return -1;
  void* data = ((DLTensor*)args[0].v_handle)->data;
  void* weight = ((DLTensor*)args[1].v_handle)->data;
  void* res = ((DLTensor*)args[2].v_handle)->data;
  if (set_device(((DLTensor*)args[0].v_handle)->device.device_id) != 0) return -1;

  VTACommandHandle cmd = VTATLSCommandHandle();
  if (VTADepPush(cmd, 3, 2) != 0) return -1;
  for (uint32_t oc_out = 0; oc_out < 4; ++oc_out) {
    if (VTADepPop(cmd, 3, 2) != 0) return -1;
    if (VTAPushGEMMOp(&reset_handle, reset_init, NULL, 0) != 0) return -1;
    if (VTADepPush(cmd, 2, 1) != 0) return -1;
    for (uint32_t ic_out = 0; ic_out < 4; ++ic_out) {
      if (VTADepPop(cmd, 2, 1) != 0) return -1;
      VTALoadBuffer2D(cmd, data, ic_out * 16, 16, 1, 16, 0, 0, 0, 0, 0, 2 /* INP */);
      VTALoadBuffer2D(cmd, weight, oc_out * 1024 + ic_out * 16, 16, 16, 64, 0, 0, 0, 0, 0,
                      1 /* WGT */);
      if (VTADepPush(cmd, 1, 2) != 0) return -1;
      if (VTADepPop(cmd, 1, 2) != 0) return -1;
      if (VTAPushGEMMOp(&gemm_handle, gemm_init, NULL, 0) != 0) return -1;
      if (VTADepPush(cmd, 2, 1) != 0) return -1;
    }
    if (VTADepPop(cmd, 2, 1) != 0) return -1;
    if (VTAPushALUOp(&shr_handle, shr_init, NULL, 0) != 0) return -1;
    if (VTAPushALUOp(&max_handle, max_init, NULL, 0) != 0) return -1;
    if (VTAPushALUOp(&min_handle, min_init, NULL, 0) != 0) return -1;
    if (VTADepPush(cmd, 2, 3) != 0) return -1;
    if (VTADepPop(cmd, 2, 3) != 0) return -1;
    for (uint32_t i = 0; i < 16; ++i) {
      VTAStoreBuffer2D(cmd, i, 4 /* OUT */, res, oc_out * 16 + i, 1, 1, 1);
    }
    if (VTADepPush(cmd, 3, 2) != 0) return -1;
  }
  if (VTASynchronize(cmd, 1u << 31) != 0) return -1;
  /* The tutorial's trailing pop: it stays pending and is consumed by the next call. */
  if (VTADepPop(cmd, 3, 2) != 0) return -1;
  return 0;
}
