/*
 * Exercises the uop-SRAM cache: two 5000-uop ALU kernels of one site (told apart by a 4-byte
 * signature, as a virtual-thread index would be) cannot both fit the 8192-entry uop SRAM, so
 * pushing kernel 0, kernel 1, kernel 0 wraps around and evicts twice: three LOAD UOPs.
 *
 * evict(x, y): x int32 (1, 4, 1, 16) ext_dev, y int8 (1, 4, 1, 16) ext_dev;
 * y = int8(x + 1250 * (1 + 2 + 1)) because kernel s adds s + 1 to each of the four tiles
 * 1250 times.
 */
#include "common.h"

#define KERNEL_UOPS 5000

static void* add_handle = NULL;

static int add_init(void* closure) {
  int32_t s;
  memcpy(&s, closure, sizeof(s));
  for (int i = 0; i < KERNEL_UOPS; ++i) {
    VTAUopPush(1, 0, (uint32_t)(i % 4), 0, 0, 2 /* ADD */, 1, s + 1);
  }
  return 0;
}

static int push_kernel(int32_t s) {
  struct {
    int32_t s;
  } closure = {s};
  return VTAPushALUOp(&add_handle, add_init, &closure, (int)sizeof(closure));
}

int evict(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value,
          int* out_ret_tcode, void* resource_handle) {
  (void)out_ret_value;
  (void)out_ret_tcode;
  (void)resource_handle;
  static const int64_t shape[4] = {1, 4, 1, 16};
  if (check_num_args("evict", num_args, 2) != 0) return -1;
  if (check_tensor("evict", args, type_codes, 0, kDLInt, 32, shape) != 0) return -1;
  if (check_tensor("evict", args, type_codes, 1, kDLInt, 8, shape) != 0) return -1;
  void* x = ((DLTensor*)args[0].v_handle)->data;
  void* y = ((DLTensor*)args[1].v_handle)->data;
  VTACommandHandle cmd = VTATLSCommandHandle();
  VTALoadBuffer2D(cmd, x, 0, 4, 1, 4, 0, 0, 0, 0, 0, 3 /* ACC */);
  if (push_kernel(0) != 0) return -1;
  if (push_kernel(1) != 0) return -1;
  if (push_kernel(0) != 0) return -1;
  if (VTADepPush(cmd, 2, 3) != 0) return -1;
  if (VTADepPop(cmd, 2, 3) != 0) return -1;
  VTAStoreBuffer2D(cmd, 0, 4 /* OUT */, y, 0, 4, 1, 4);
  return VTASynchronize(cmd, 1u << 31);
}
