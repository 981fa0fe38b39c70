/*
 * The simple matrix multiply, written by hand as generated host code would be (reference
 * tvm-vta-software.md 3.2): C = int8(A . B^T) for A int8 (1, 16, 1, 16) and B int8
 * (16, 16, 16, 16) in the packed tile layouts, through GEMM uop kernels with hardware loops.
 */
#include "common.h"

static void* gemm_reset_handle = NULL;
static void* gemm_handle = NULL;

/* ACC[co] = 0 for the 16 output tiles. */
static int gemm_reset_init(void* closure) {
  (void)closure;
  VTAUopLoopBegin(16, 1, 0, 0);
  VTAUopPush(0, 1, 0, 0, 0, 0, 0, 0);
  VTAUopLoopEnd();
  return 0;
}

/* ACC[co] += INP[0] . WGT[co]^T for the 16 output tiles. */
static int gemm_init(void* closure) {
  (void)closure;
  VTAUopLoopBegin(16, 1, 0, 1);
  VTAUopPush(0, 0, 0, 0, 0, 0, 0, 0);
  VTAUopLoopEnd();
  return 0;
}

static int check_args(const char* fn, TVMValue* args, int* type_codes, int num_args) {
  static const int64_t a_shape[4] = {1, 16, 1, 16};
  static const int64_t b_shape[4] = {16, 16, 16, 16};
  if (check_num_args(fn, num_args, 3) != 0) return -1;
  if (check_tensor(fn, args, type_codes, 0, kDLInt, 8, a_shape) != 0) return -1;
  if (check_tensor(fn, args, type_codes, 1, kDLInt, 8, b_shape) != 0) return -1;
  if (check_tensor(fn, args, type_codes, 2, kDLInt, 8, a_shape) != 0) return -1;
  return set_device(((DLTensor*)args[0].v_handle)->device.device_id);
}

/* The compute body without the final synchronisation. */
static int gemm_body(VTACommandHandle cmd, void* a, void* b, void* c) {
  if (VTAPushGEMMOp(&gemm_reset_handle, gemm_reset_init, NULL, 0) != 0) return -1;
  if (VTADepPush(cmd, 2, 1) != 0) return -1;
  for (uint32_t ko = 0; ko < 16; ++ko) {
    if (VTADepPop(cmd, 2, 1) != 0) return -1;
    VTALoadBuffer2D(cmd, a, ko, 1, 1, 1, 0, 0, 0, 0, 0, 2 /* INP */);
    VTALoadBuffer2D(cmd, b, ko, 1, 16, 16, 0, 0, 0, 0, 0, 1 /* WGT */);
    if (VTADepPush(cmd, 1, 2) != 0) return -1;
    if (VTADepPop(cmd, 1, 2) != 0) return -1;
    if (VTAPushGEMMOp(&gemm_handle, gemm_init, NULL, 0) != 0) return -1;
    if (VTADepPush(cmd, 2, 1) != 0) return -1;
  }
  if (VTADepPush(cmd, 2, 3) != 0) return -1;
  if (VTADepPop(cmd, 2, 1) != 0) return -1;
  if (VTADepPop(cmd, 2, 3) != 0) return -1;
  VTAStoreBuffer2D(cmd, 0, 4 /* OUT */, c, 0, 16, 1, 16);
  return 0;
}

int my_gemm(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value,
            int* out_ret_tcode, void* resource_handle) {
  (void)out_ret_value;
  (void)out_ret_tcode;
  (void)resource_handle;
  if (check_args("my_gemm", args, type_codes, num_args) != 0) return -1;
  VTACommandHandle cmd = VTATLSCommandHandle();
  void* a = ((DLTensor*)args[0].v_handle)->data;
  void* b = ((DLTensor*)args[1].v_handle)->data;
  void* c = ((DLTensor*)args[2].v_handle)->data;
  if (gemm_body(cmd, a, b, c) != 0) return -1;
  if (VTASynchronize(cmd, 1u << 31) != 0) return -1;
  return 0;
}

/* The same computation twice in one synchronisation window: the second pass finds both
 * kernels resident in the uop SRAM and loads no uops. */
int my_gemm_twice(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value,
                  int* out_ret_tcode, void* resource_handle) {
  (void)out_ret_value;
  (void)out_ret_tcode;
  (void)resource_handle;
  if (check_args("my_gemm_twice", args, type_codes, num_args) != 0) return -1;
  VTACommandHandle cmd = VTATLSCommandHandle();
  void* a = ((DLTensor*)args[0].v_handle)->data;
  void* b = ((DLTensor*)args[1].v_handle)->data;
  void* c = ((DLTensor*)args[2].v_handle)->data;
  if (gemm_body(cmd, a, b, c) != 0) return -1;
  if (gemm_body(cmd, a, b, c) != 0) return -1;
  if (VTASynchronize(cmd, 1u << 31) != 0) return -1;
  return 0;
}

const char __tvm_main__[] = "my_gemm";
