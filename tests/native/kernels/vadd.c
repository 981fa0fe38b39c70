/*
 * The "Get Started" vector add, written by hand as generated host code would be
 * (reference tvm-vta-software.md 3.1 and 5.2): C = int8(A + B) for A, B int32 (1, 64, 1, 16).
 */
#include "common.h"

/* One static handle per uop-kernel site; the runtime keeps the recorded kernels behind it. */
static void* alu_add_handle = NULL;

/* The closure of the ALU site: one loop of 64 tiles, ACC[i] = ACC[i] + ACC[64 + i]. */
static int alu_add_init(void* closure) {
  (void)closure;
  VTAUopLoopBegin(64, 1, 1, 0);
  VTAUopPush(1, 0, 0, 64, 0, 2 /* ADD */, 0, 0);
  VTAUopLoopEnd();
  return 0;
}

int my_vadd(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value,
            int* out_ret_tcode, void* resource_handle) {
  (void)out_ret_value;
  (void)out_ret_tcode;
  (void)resource_handle;
  static const int64_t shape[4] = {1, 64, 1, 16};
  if (check_num_args("my_vadd", num_args, 3) != 0) return -1;
  if (check_tensor("my_vadd", args, type_codes, 0, kDLInt, 32, shape) != 0) return -1;
  if (check_tensor("my_vadd", args, type_codes, 1, kDLInt, 32, shape) != 0) return -1;
  if (check_tensor("my_vadd", args, type_codes, 2, kDLInt, 8, shape) != 0) return -1;
  DLTensor* a = (DLTensor*)args[0].v_handle;
  DLTensor* b = (DLTensor*)args[1].v_handle;
  DLTensor* c = (DLTensor*)args[2].v_handle;
  if (set_device(a->device.device_id) != 0) return -1;

  VTACommandHandle cmd = VTATLSCommandHandle();
  VTALoadBuffer2D(cmd, a->data, 0, 64, 1, 64, 0, 0, 0, 0, 0, 3 /* ACC */);
  VTALoadBuffer2D(cmd, b->data, 0, 64, 1, 64, 0, 0, 0, 0, 64, 3 /* ACC */);
  if (VTAPushALUOp(&alu_add_handle, alu_add_init, NULL, 0) != 0) return -1;
  if (VTADepPush(cmd, 2, 3) != 0) return -1;
  if (VTADepPop(cmd, 2, 3) != 0) return -1;
  VTAStoreBuffer2D(cmd, 0, 4 /* OUT */, c->data, 0, 64, 1, 64);
  if (VTASynchronize(cmd, 1u << 31) != 0) return -1;
  return 0;
}

/* The entry point's name, read by the loader as a C string. */
const char __tvm_main__[] = "my_vadd";
