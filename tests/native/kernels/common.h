/*
 * Helpers shared by the hand-written host kernels of the native runtime tests. They do what
 * generated host code does before the compute body (reference tvm-vta-software.md 5.2):
 * check the packed arguments one by one and call __tvm_set_device through the module context.
 */
#ifndef VTA_TEST_KERNEL_COMMON_H_
#define VTA_TEST_KERNEL_COMMON_H_

#include <stdio.h>
#include <string.h>

#include "tvm_c_abi.h"
#include "vta_runtime.h"

/* Filled by the module loader; TVMBackendGetFuncFromEnv searches the module, then the registry. */
void* __tvm_module_ctx = NULL;

static inline int kernel_fail(const char* msg) {
  TVMAPISetLastError(msg);
  return -1;
}

/* Check argument i is a compact 4-D tensor of the given dtype and shape on ext_dev. */
static inline int check_tensor(const char* fn, TVMValue* args, int* codes, int i, uint8_t code,
                        uint8_t bits, const int64_t* shape) {
  char kernel_msg[256];
  int tc = codes[i];
  if (tc != kTVMOpaqueHandle && tc != kTVMNDArrayHandle && tc != kTVMDLTensorHandle &&
      tc != kTVMNullptr) {
    snprintf(kernel_msg, sizeof(kernel_msg), "%s: Expect arg[%d] to be pointer", fn, i);
    return kernel_fail(kernel_msg);
  }
  DLTensor* t = (DLTensor*)args[i].v_handle;
  if (t == NULL) {
    snprintf(kernel_msg, sizeof(kernel_msg), "%s: arg[%d] is a NULL tensor", fn, i);
    return kernel_fail(kernel_msg);
  }
  if (t->ndim != 4) {
    snprintf(kernel_msg, sizeof(kernel_msg), "%s: arg[%d].ndim is expected to equal 4, got %d",
             fn, i, (int)t->ndim);
    return kernel_fail(kernel_msg);
  }
  if (t->dtype.code != code || t->dtype.bits != bits || t->dtype.lanes != 1) {
    snprintf(kernel_msg, sizeof(kernel_msg),
             "%s: arg[%d].dtype is expected to be %s%u, got code %u bits %u lanes %u", fn, i,
             code == kDLInt ? "int" : "uint", bits, t->dtype.code, t->dtype.bits,
             t->dtype.lanes);
    return kernel_fail(kernel_msg);
  }
  for (int d = 0; d < 4; ++d) {
    if (t->shape[d] != shape[d]) {
      snprintf(kernel_msg, sizeof(kernel_msg),
               "%s: Argument arg[%d].shape[%d] has an unsatisfied constraint: %lld == %lld", fn,
               i, d, (long long)shape[d], (long long)t->shape[d]);
      return kernel_fail(kernel_msg);
    }
  }
  if (t->strides != NULL) {
    int64_t expect = 1;
    for (int d = 3; d >= 0; --d) {
      if (t->shape[d] != 1 && t->strides[d] != expect) {
        snprintf(kernel_msg, sizeof(kernel_msg), "%s: arg[%d] must be a compact array", fn, i);
        return kernel_fail(kernel_msg);
      }
      expect *= t->shape[d];
    }
  }
  if (t->byte_offset != 0) {
    snprintf(kernel_msg, sizeof(kernel_msg), "%s: arg[%d].byte_offset must be 0", fn, i);
    return kernel_fail(kernel_msg);
  }
  if (t->device.device_type != kDLExtDev) {
    snprintf(kernel_msg, sizeof(kernel_msg),
             "%s: Argument arg[%d].device_type has an unsatisfied constraint: 12 == %d", fn, i,
             (int)t->device.device_type);
    return kernel_fail(kernel_msg);
  }
  DLTensor* first = (DLTensor*)args[0].v_handle;
  if (t->device.device_id != first->device.device_id) {
    snprintf(kernel_msg, sizeof(kernel_msg), "%s: arg[%d] is on another device id than arg[0]",
             fn, i);
    return kernel_fail(kernel_msg);
  }
  return 0;
}

static inline int check_num_args(const char* fn, int num_args, int expected) {
  char kernel_msg[256];
  if (num_args != expected) {
    snprintf(kernel_msg, sizeof(kernel_msg), "%s: num_args should be %d", fn, expected);
    return kernel_fail(kernel_msg);
  }
  return 0;
}

/* __tvm_set_device(12, dev_id), found through the module context like generated code does. */
static inline int set_device(int dev_id) {
  static TVMFunctionHandle set_device_fn = NULL;
  if (set_device_fn == NULL &&
      TVMBackendGetFuncFromEnv(__tvm_module_ctx, "__tvm_set_device", &set_device_fn) != 0) {
    return -1;
  }
  TVMValue values[2];
  int codes[2] = {kTVMArgInt, kTVMArgInt};
  values[0].v_int64 = kDLExtDev;
  values[1].v_int64 = dev_id;
  TVMValue ret;
  int ret_code = kTVMNullptr;
  return TVMFuncCall(set_device_fn, values, codes, 2, &ret, &ret_code);
}

#endif /* VTA_TEST_KERNEL_COMMON_H_ */
